import type { Redact } from '../secrets/redactor';
import type { McpToolRef, ToolDefinition, ToolSafety } from '../tools/tool-definition';

/** A tool as an MCP server lists it (`tools/list`), only the fields we read. */
export interface ListedMcpTool {
  name: string;
  description?: string;
  inputSchema?: unknown;
  annotations?: { readOnlyHint?: unknown; destructiveHint?: unknown; title?: unknown };
}

export interface McpToolLimits {
  maxToolsPerServer: number;
  maxSchemaBytes: number;
  maxDescriptionChars: number;
}

/** A listed tool we could not offer, and why (reported by refresh, never silently dropped). */
export interface SkippedMcpTool {
  name: string;
  reason: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What OpenAI accepts as a function name: the MCP tool keeps its own name when it fits (Letta's naming). */
const FUNCTION_NAME = /^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$/;

/**
 * The safety class of an MCP tool: the declaration's override, else its annotations
 * (`readOnlyHint` → read_only, `destructiveHint` → privileged, otherwise side_effecting). A tool that
 * claims both is privileged: hints are the server's word, and the stricter reading fails closed.
 */
export function mcpToolSafety(tool: ListedMcpTool, override: ToolSafety | undefined): ToolSafety {
  if (override) return override;
  if (tool.annotations?.destructiveHint === true) return 'privileged';
  if (tool.annotations?.readOnlyHint === true) return 'read_only';
  return 'side_effecting';
}

/**
 * The listed tools as tool definitions of kind `mcp`, bounded: at most `maxToolsPerServer`, each schema at
 * most `maxSchemaBytes` of JSON and an object schema that `compile` accepts, names that a model can call.
 * A listing is shown to tenants and models: the secret values the connection used are `redact`ed from it
 * first (a name that held one is no function name any more).
 */
export function mcpToolDefinitions(
  listed: readonly ListedMcpTool[],
  server: Omit<McpToolRef, 'tool'>,
  overrides: Record<string, ToolSafety>,
  limits: McpToolLimits,
  compile: (schema: Record<string, unknown>) => string | null,
  redact: Redact,
): { tools: ToolDefinition[]; skipped: SkippedMcpTool[] } {
  const tools: ToolDefinition[] = [];
  const skipped: SkippedMcpTool[] = [];
  const seen = new Set<string>();
  for (const raw of listed) {
    const name = redact(typeof raw.name === 'string' ? raw.name : '');
    const skip = (reason: string) => skipped.push({ name: name.slice(0, 200), reason });
    let t: ListedMcpTool;
    try {
      t = JSON.parse(redact(JSON.stringify(raw))) as ListedMcpTool;
    } catch {
      skip('its listing holds a secret value of the server’s settings');
      continue;
    }
    if (!FUNCTION_NAME.test(name)) {
      skip('the name is not a valid function name (letters, digits, _ or -, at most 64)');
      continue;
    }
    if (seen.has(name)) {
      skip('listed twice by the server');
      continue;
    }
    if (tools.length >= limits.maxToolsPerServer) {
      skip(`over mcp.max_tools_per_server (${limits.maxToolsPerServer})`);
      continue;
    }
    const schema = t.inputSchema === undefined ? { type: 'object', properties: {} } : t.inputSchema;
    if (!isObj(schema) || schema.type !== 'object') {
      skip('inputSchema must be a JSON Schema of type object');
      continue;
    }
    // Draft markers are dropped: the argument validator speaks one draft, and the rest of the schema is kept.
    const { $schema: _draft, ...parameters } = schema;
    if (Buffer.byteLength(JSON.stringify(parameters)) > limits.maxSchemaBytes) {
      skip(`inputSchema is over mcp.max_tool_schema_bytes (${limits.maxSchemaBytes})`);
      continue;
    }
    const problem = compile(parameters);
    if (problem !== null) {
      skip(`inputSchema is refused: ${problem}`);
      continue;
    }
    seen.add(name);
    const description = typeof t.description === 'string' ? t.description : '';
    tools.push({
      name,
      description: description.slice(0, limits.maxDescriptionChars),
      parameters,
      safety: mcpToolSafety(t, overrides[name]),
      kind: 'mcp',
      mcp: { ...server, tool: name },
    });
  }
  return { tools, skipped };
}

/** A `tools/call` result, only the fields we read. */
export interface McpCallResult {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
}

/**
 * A call result as a tool return: text parts joined by newlines; JSON (`structuredContent`) when there
 * is no text; other parts named, not inlined (an image is no use as text to a model); `isError` makes
 * it an error return. The connection's secret values `redact`ed, then bounded to `maxBytes` of UTF-8, the
 * way http tool bodies are.
 */
export function mcpToolReturn(
  result: McpCallResult,
  maxBytes: number,
  redact: Redact,
): { status: 'success' | 'error'; value: string } {
  const parts: string[] = [];
  const content = Array.isArray(result.content) ? (result.content as unknown[]) : [];
  for (const c of content) {
    if (!isObj(c)) continue;
    if (c.type === 'text' && typeof c.text === 'string') parts.push(c.text);
    else if (c.type === 'resource' && isObj(c.resource) && typeof c.resource.text === 'string')
      parts.push(c.resource.text);
    else if (c.type === 'resource_link' && typeof c.uri === 'string')
      parts.push(`[resource ${c.uri}]`);
    else if (typeof c.type === 'string')
      parts.push(`[${c.type}${typeof c.mimeType === 'string' ? ` ${c.mimeType}` : ''} omitted]`);
  }
  let value = parts.join('\n');
  if (!parts.some((p) => !p.startsWith('[')) && result.structuredContent !== undefined)
    value = JSON.stringify(result.structuredContent);
  return {
    status: result.isError === true ? 'error' : 'success',
    // before the cut, which could leave part of a value
    value: truncateUtf8(redact(value), maxBytes),
  };
}

/** At most `maxBytes` of UTF-8, cut on a character boundary, with a note saying it was cut. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const note = `\n[truncated: the result was over ${maxBytes} bytes]`;
  const budget = Math.max(0, maxBytes - Buffer.byteLength(note));
  let cut = Buffer.from(text).subarray(0, budget).toString('utf8');
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return cut + note;
}
