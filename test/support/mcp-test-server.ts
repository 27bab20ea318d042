/**
 * A real MCP server for tests, written with the official SDK (low-level `Server`, so the tools' JSON
 * Schemas and annotations are exactly what we list). The same tools serve over stdio (run this file:
 * `node -r ts-node/register/transpile-only test/support/mcp-test-server.ts`) and over streamable HTTP
 * on 127.0.0.1 and a free port (`startHttpMcpServer()`).
 *
 * Tools: echo (read-only; answers the text and the request `_meta`), slow_read (read-only, 150 ms,
 * reports how many calls overlapped), add (structured result), fail (isError), delete_everything
 * (destructive), pid, die (SIGKILLs its own process mid-call), hang (never answers; counts cancellations),
 * big (a large text), add_tool (adds `late_tool` and sends tools/list_changed), env (an environment
 * variable, as a text, an error result or a thrown error), argv (its command-line arguments), headers (over
 * HTTP, the request's headers), note (described by its TOOL_NOTE variable). Over stdio the names
 * carry the prefix in `TOOL_PREFIX` (so both servers' tools can sit side by side in one tenant), and
 * only there are `die` and `flood` (one endless line on stdout) listed.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  CallToolResult,
  isInitializeRequest,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

export interface McpTestState {
  calls: { name: string; args: Record<string, unknown>; meta: unknown }[];
  cancelled: number;
  maxOverlap: number;
  extraTools: string[];
}

const obj = (properties: Record<string, unknown> = {}, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
});

function toolList(state: McpTestState, prefix: string) {
  const tools = [
    {
      name: 'echo',
      description: 'Echoes the text.',
      inputSchema: obj({ text: { type: 'string' } }, ['text']),
      annotations: { readOnlyHint: true },
    },
    {
      name: 'slow_read',
      description: 'Reads slowly.',
      inputSchema: obj({ key: { type: 'string' } }),
      annotations: { readOnlyHint: true },
    },
    {
      name: 'add',
      description: 'Adds.',
      inputSchema: obj({ a: { type: 'number' }, b: { type: 'number' } }, ['a', 'b']),
    },
    { name: 'fail', description: 'Fails.', inputSchema: obj() },
    {
      name: 'delete_everything',
      description: 'Deletes everything.',
      inputSchema: obj(),
      annotations: { destructiveHint: true },
    },
    { name: 'pid', description: 'The process id.', inputSchema: obj() },
    ...(prefix
      ? [
          { name: 'die', description: 'Kills its own process mid-call.', inputSchema: obj() },
          { name: 'flood', description: 'Writes one endless line.', inputSchema: obj() },
        ]
      : []),
    { name: 'hang', description: 'Never answers.', inputSchema: obj() },
    { name: 'big', description: 'A large text.', inputSchema: obj({ bytes: { type: 'number' } }) },
    { name: 'add_tool', description: 'Adds late_tool.', inputSchema: obj() },
    {
      name: 'env',
      description: 'An environment variable.',
      inputSchema: obj({ name: { type: 'string' }, as: { enum: ['text', 'error', 'throw'] } }),
    },
    { name: 'argv', description: 'Its command-line arguments.', inputSchema: obj() },
    { name: 'headers', description: 'The request’s headers.', inputSchema: obj() },
    { name: 'note', description: process.env.TOOL_NOTE ?? 'A note.', inputSchema: obj() },
    { name: 'drop', description: 'Over HTTP, the connection drops mid-call.', inputSchema: obj() },
    { name: 'bad.name', description: 'Not a function name.', inputSchema: obj() },
    ...state.extraTools.map((name) => ({ name, description: 'Added late.', inputSchema: obj() })),
  ];
  return tools.map((t) => ({ ...t, name: prefix + t.name }));
}

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });

export function createTestMcpServer(state: McpTestState, prefix = ''): Server {
  const server = new Server(
    { name: 'rulebound-test-server', version: '1.0.0' },
    { capabilities: { tools: { listChanged: true } } },
  );
  let inFlight = 0;
  server.setRequestHandler(ListToolsRequestSchema, () =>
    Promise.resolve({ tools: toolList(state, prefix) }),
  );
  server.setRequestHandler(CallToolRequestSchema, async (req, extra): Promise<CallToolResult> => {
    const args = req.params.arguments ?? {};
    state.calls.push({ name: req.params.name, args, meta: req.params._meta });
    switch (req.params.name.slice(prefix.length)) {
      case 'echo':
        return text(JSON.stringify({ echo: args.text, meta: req.params._meta }));
      case 'slow_read': {
        inFlight++;
        state.maxOverlap = Math.max(state.maxOverlap, inFlight);
        await new Promise((r) => setTimeout(r, 150));
        inFlight--;
        return text(`read ${String(args.key)}`);
      }
      case 'add':
        return {
          content: [],
          structuredContent: { sum: Number(args.a) + Number(args.b) },
        };
      case 'fail':
        return { content: [{ type: 'text', text: 'it broke' }], isError: true };
      case 'delete_everything':
        return text('deleted');
      case 'pid':
        return text(String(process.pid));
      case 'die':
        setTimeout(() => process.kill(process.pid, 'SIGKILL'), 20);
        return new Promise<CallToolResult>(() => undefined);
      case 'flood': {
        // one line that never ends, under the protocol's feet, until the process is stopped
        const chunk = 'x'.repeat(65536);
        const write = (): void => {
          if (process.stdout.write(chunk)) setImmediate(write);
          else process.stdout.once('drain', write);
        };
        write();
        return new Promise<CallToolResult>(() => undefined);
      }
      case 'drop':
      case 'hang':
        return new Promise<CallToolResult>((_resolve, reject) => {
          extra.signal.addEventListener('abort', () => {
            state.cancelled++;
            reject(new Error('cancelled'));
          });
        });
      case 'big':
        return text('x'.repeat(Number(args.bytes ?? 10)));
      case 'env': {
        const value = process.env[String(args.name)] ?? '';
        if (args.as === 'throw') throw new Error(`no access with ${value}`);
        return { content: [{ type: 'text', text: value }], isError: args.as === 'error' };
      }
      case 'argv':
        return text(process.argv.slice(2).join(' '));
      case 'headers':
        return text(JSON.stringify(extra.requestInfo?.headers ?? {}));
      case 'add_tool':
        if (!state.extraTools.includes('late_tool')) state.extraTools.push('late_tool');
        await server.sendToolListChanged();
        return text('added');
      default:
        return text(`called ${req.params.name}`);
    }
  });
  return server;
}

export const newState = (): McpTestState => ({
  calls: [],
  cancelled: 0,
  maxOverlap: 0,
  extraTools: [],
});

/** Streamable HTTP on 127.0.0.1:0, one session (and one `Server`) per client. */
export async function startHttpMcpServer(): Promise<{
  url: string;
  state: McpTestState;
  /** Headers of every request, lower-cased names. */
  headers: Record<string, string | string[] | undefined>[];
  close(): Promise<void>;
}> {
  const state = newState();
  const headers: Record<string, string | string[] | undefined>[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    headers.push({ ...req.headers });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const body: unknown = raw ? JSON.parse(raw) : undefined;
      const sid = req.headers['mcp-session-id'];
      let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (!transport && isInitializeRequest(body)) {
        const t = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void sessions.set(id, t),
        });
        transport = t;
        void createTestMcpServer(state).connect(t);
      }
      if (!transport) {
        res.writeHead(400).end('no session');
        return;
      }
      // `drop`: the HTTP server goes away mid-call (its socket is destroyed before it answers).
      const call = body as { method?: string; params?: { name?: string } } | undefined;
      if (call?.method === 'tools/call' && call.params?.name === 'drop')
        setTimeout(() => req.socket.destroy(), 20);
      void transport.handleRequest(req, res, body);
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    state,
    headers,
    close: async () => {
      await Promise.all([...sessions.values()].map((t) => t.close()));
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}

/**
 * This file transpiled to plain JS under node_modules/.cache, so a stdio (re)start is a bare `node` (no
 * ts-node) and still resolves the SDK from the project's node_modules. Returns the script's path.
 */
export function stdioServerScript(): string {
  const out = path.resolve(__dirname, '../../node_modules/.cache/rulebound-mcp-test-server.js');
  const js = ts.transpileModule(readFileSync(__filename, 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
  }).outputText;
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, js);
  return out;
}

// Run as a script: serve over stdio.
if (require.main === module) {
  void createTestMcpServer(newState(), process.env.TOOL_PREFIX ?? '').connect(
    new StdioServerTransport(),
  );
}
