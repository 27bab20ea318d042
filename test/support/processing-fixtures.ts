/* eslint-disable @typescript-eslint/no-explicit-any */
/**
 * Fixtures for the processing e2e suites: JSON requests against the app, agents pointed at the fake
 * model server, and http tools served by a local tool server whose answers each test decides.
 */
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { isHeartbeatContent } from '../../src/core/loop/heartbeat-message';
import { startApp, StartOptions, TestApp } from './app-harness';
import { FakeModelServer, startFakeModelServer } from './fake-model-server';

export interface Reply {
  status: number;
  body: any;
}

export async function api(
  t: TestApp,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const res = await fetch(`${t.baseUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // SSE or plain text: kept as text
  }
  return { status: res.status, body: parsed };
}

export const say = (content: string, extra: Record<string, unknown> = {}) => ({
  messages: [{ role: 'user', content }],
  ...extra,
});

/** Config override with two tenants' API keys; `TENANT_A` / `TENANT_B` are their request headers. */
export const TWO_TENANTS = {
  auth: {
    api_keys: [
      { key: 'key-a', tenant: 'tenant-a' },
      { key: 'key-b', tenant: 'tenant-b' },
    ],
  },
};
export const TENANT_A = { authorization: 'Bearer key-a' };
export const TENANT_B = { authorization: 'Bearer key-b' };

export async function createAgent(
  t: TestApp,
  fake: FakeModelServer | null,
  over: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<string> {
  const res = await api(
    t,
    'POST',
    '/v1/agents/',
    {
      name: `agent-${Math.random().toString(36).slice(2)}`,
      system: 'You are a test agent.',
      llm_config: fake
        ? {
            model: 'fake',
            model_endpoint_type: 'openai',
            model_endpoint: fake.baseUrl,
            context_window: 8000,
          }
        : { model: 'scripted', model_endpoint_type: 'scripted', context_window: 8000 },
      ...over,
    },
    headers,
  );
  if (res.status !== 200) throw new Error(`agent create failed: ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

export interface ToolCallSeen {
  name: string;
  arguments: Record<string, unknown>;
  tool_call_id: string;
}

export type ToolHandler = (
  call: ToolCallSeen,
  /** Resolves when the caller hangs up before the answer (an aborted tool call). */
  hungUp: Promise<void>,
) => Promise<{ status?: number; body: string }> | { status?: number; body: string };

export interface ToolServer {
  baseUrl: string;
  calls: ToolCallSeen[];
  /** The run and agent each call came from (the invoker's body), by tool_call_id. */
  origins: Map<string, { run_id: string; agent_id: string }>;
  /** Answers calls to `name` (default: 200 "ok:<name>"). */
  handle(name: string, fn: ToolHandler): void;
  /** Registers an http tool on the app that posts here. */
  declare(t: TestApp, name: string, over?: Record<string, unknown>): Promise<void>;
  close(): Promise<void>;
}

export async function startToolServer(): Promise<ToolServer> {
  const calls: ToolCallSeen[] = [];
  const origins: ToolServer['origins'] = new Map();
  const handlers = new Map<string, ToolHandler>();
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const name = (req.url ?? '/').split('/').pop() ?? '';
      const payload = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      const call = { name, arguments: payload.arguments, tool_call_id: payload.tool_call_id };
      calls.push(call);
      origins.set(call.tool_call_id, { run_id: payload.run_id, agent_id: payload.agent_id });
      const fn: ToolHandler = handlers.get(name) ?? (() => ({ body: `ok:${name}` }));
      const hungUp = new Promise<void>((r) =>
        res.on('close', () => {
          if (!res.writableEnded) r();
        }),
      );
      Promise.resolve(fn(call, hungUp))
        .then((r) => {
          if (res.writableEnded || res.destroyed) return;
          res.writeHead(r.status ?? 200, { 'content-type': 'text/plain' });
          res.end(r.body);
        })
        .catch(() => res.destroy());
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    calls,
    origins,
    handle: (name, fn) => handlers.set(name, fn),
    async declare(t, name, over = {}) {
      const res = await api(t, 'POST', '/v1/tools/', {
        name,
        description: `test tool ${name}`,
        parameters: { type: 'object', properties: { q: { type: 'string' } } },
        safety: 'read_only',
        kind: 'http',
        http: { url: `${baseUrl}/tool/${name}`, method: 'POST' },
        ...over,
      });
      if (res.status !== 200 && res.status !== 201) {
        throw new Error(`tool declare failed: ${JSON.stringify(res.body)}`);
      }
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * Whether a message is a heartbeat the loop wrote (Letta's `get_heartbeat` JSON), not the user's: a model
 * request's `{role, content}` or a stored `user_message`. Fake models that answer the user's last words
 * look past these.
 */
export const isHeartbeat = (m: { role?: string; message_type?: string; content?: unknown }) =>
  (m.role === 'user' || m.message_type === 'user_message') && isHeartbeatContent(m.content);

/** Message types of a batch response, in order. */
export const types = (messages: any[]) => messages.map((m) => m.message_type as string);

/** Waits until the run has ended (polls the API; no timing is asserted). */
export async function runEnded(t: TestApp, runId: string): Promise<any> {
  for (;;) {
    const r = await api(t, 'GET', `/v1/runs/${runId}`);
    if (['completed', 'failed', 'cancelled'].includes(r.body.status)) return r.body;
    await new Promise((res) => setTimeout(res, 10));
  }
}

/** The app, the fake model server and the tool server of a processing suite. */
export interface LoopEnv {
  t: TestApp;
  fake: FakeModelServer;
  tools: ToolServer;
  /** Between tests: clears the model queues and the tool calls seen. */
  reset(): void;
  close(): Promise<void>;
}

export async function startLoopEnv(
  toolNames: (string | [string, Record<string, unknown>])[] = [],
  opts: StartOptions = {},
): Promise<LoopEnv> {
  const fake = await startFakeModelServer();
  const tools = await startToolServer();
  const t = await startApp({ modelBaseUrl: fake.baseUrl, ...opts });
  for (const entry of toolNames) {
    const [name, over] = typeof entry === 'string' ? [entry, {}] : entry;
    await tools.declare(t, name, over);
  }
  return {
    t,
    fake,
    tools,
    reset() {
      fake.reset();
      tools.calls.length = 0;
    },
    async close() {
      await t.close();
      await fake.close();
      await tools.close();
    },
  };
}
