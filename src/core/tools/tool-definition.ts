/** A tool the agent may call, as declared in config/tools/*.yaml, over POST /v1/tools/, or built in. */
export type ToolSafety = 'read_only' | 'side_effecting' | 'privileged';
export const TOOL_SAFETIES: readonly ToolSafety[] = ['read_only', 'side_effecting', 'privileged'];
/** `client`: offered per request (Letta's `client_tools`) and run by the client, which returns the result. */
export type ToolKind = 'builtin' | 'http' | 'mcp' | 'client';

export interface HttpToolSpec {
  url: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Values may name an environment variable as `${NAME}`; resolved only when the call is sent. */
  headers?: Record<string, string>;
  timeout_ms?: number;
}

export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
  safety: ToolSafety;
  kind: ToolKind;
  http?: HttpToolSpec;
  mcp?: McpToolRef;
  /** Letta's metadata tags (lists filter by them); an MCP tool's are `mcp:<server>`. */
  tags?: string[];
  /** The model reads at most this many characters of a return (Letta's; default below). */
  return_char_limit?: number;
  /**
   * Letta's `default_requires_approval`: an agent given this tool (created with it, or attached) gets a
   * `requires_approval` rule for it. Absent: never set (Letta answers null).
   */
  default_requires_approval?: boolean;
}

/** Letta's `FUNCTION_RETURN_CHAR_LIMIT`: what a tool's return is cut to when it sets none. */
export const DEFAULT_RETURN_CHAR_LIMIT = 50_000;
/** Letta's bound on a tool's `return_char_limit`. */
export const MAX_RETURN_CHAR_LIMIT = 1_000_000;

/** Where an MCP tool lives: its server (by id, and name for display) and its name there. */
export interface McpToolRef {
  server_id: string;
  server_name: string;
  tool: string;
}
