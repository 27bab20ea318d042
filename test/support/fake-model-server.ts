/**
 * A fake OpenAI-compatible chat-completions server for tests, on 127.0.0.1 and a free port.
 *
 *   const fake = await startFakeModelServer();
 *   fake.push({ tool_calls: [{ name: 'search', arguments: { q: 'x' } }] }, { content: 'done' });
 *   fake.push([{ content: 'hi from A' }], { key: 'You are agent A' }); // keyed: system prompt contains the key
 *   ... start the app with startApp({ modelBaseUrl: fake.baseUrl }) and give agents llm_config { model_endpoint_type: 'openai', model_endpoint: fake.baseUrl } ...
 *   expect(fake.requests[0].toolNames).toEqual(['search', 'send_message']);
 *   await fake.close();
 *
 * How a request is answered, first match wins:
 *   1. the queue of the first key (in push order) whose text occurs in the request's system prompt and that still has turns;
 *   2. the unkeyed FIFO queue;
 *   3. the `respond(fn)` function, if set and it returns a turn;
 *   4. a plain assistant text "ok" with no tool calls, so nothing ever hangs.
 * `stream: true` requests are answered as SSE chunks (content in several deltas, tool-call arguments in fragments,
 * a usage chunk when `stream_options.include_usage`), then `data: [DONE]`; a turn's `sse` frames are sent
 * verbatim instead (`sseChunk(delta)` builds one), for shapes the fake does not make itself.
 *
 * `POST …/embeddings` answers `fakeEmbedding(text)` per input (FAKE_EMBEDDING_DIM numbers): words of a few
 * topics (pets, food, weather, travel, music, code) share a dimension per topic, so "kitten" is close to
 * "dog" without sharing a word; `failEmbeddings(503)` makes it answer an error instead. Its requests are in
 * `embeddingRequests`, not `requests`.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- recorded bodies are arbitrary JSON that tests inspect freely */
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';

export interface FakeToolCall {
  name: string;
  /** An object is JSON-encoded; a string is sent as is (so a test can send invalid JSON). */
  arguments: Record<string, unknown> | string;
  id?: string;
}

export interface FakeUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  /** Sent as given (OpenAI's `{cached_tokens}`), in the answer's usage and a stream's usage chunk. */
  prompt_tokens_details?: Record<string, unknown>;
  /** Sent as given (OpenAI's `{reasoning_tokens}`). */
  completion_tokens_details?: Record<string, unknown>;
}

export interface FakeTurn {
  content?: string;
  /** Sent as `reasoning_content` (DeepSeek/vLLM style). */
  reasoning?: string;
  tool_calls?: FakeToolCall[];
  usage?: FakeUsage;
  /** Default `tool_calls` when the turn has tool calls, else `stop`. */
  finish_reason?: string;
  /**
   * An error status (e.g. 429, 500, 400): the answer is `body` (default an OpenAI-style error) as JSON. A 3xx
   * is answered with `headers` (say a `location`) and no body: a redirect.
   */
  status?: number;
  body?: unknown;
  /** Extra response headers (e.g. `Retry-After`). */
  headers?: Record<string, string>;
  /** Hold the response this long (ms); released early when the client disconnects. */
  delayMs?: number;
  /** Send this text as the 200 body verbatim (an unparseable response). */
  raw?: string;
  /** Destroy the socket without answering (a connection error for the client). */
  dropConnection?: boolean;
  /**
   * Answer with these SSE frames verbatim (whatever the request asked): an object is sent as
   * `data: <JSON>\n\n`, a string as is; then `data: [DONE]\n\n` unless `sseDone` is false. For stream
   * shapes the fake does not make itself (tool-call deltas without an index, odd line endings, …).
   */
  sse?: (Record<string, unknown> | string)[];
  sseDone?: boolean;
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The parsed JSON body (undefined when it was not JSON). */
  body: any;
  model: string | undefined;
  messages: any[];
  /** Concatenated text of the system messages. */
  system: string;
  tools: any[];
  toolNames: string[];
  tool_choice: unknown;
  stream: boolean;
  /** The key whose queue answered, if any. */
  key?: string;
  /** The turn that answered (the default "ok" turn when nothing else did). */
  turn?: FakeTurn;
}

export type Responder = (
  req: RecordedRequest,
) => FakeTurn | undefined | Promise<FakeTurn | undefined>;

export interface PushOptions {
  /** Serve these turns only to requests whose system prompt contains this text. */
  key?: string;
}

export interface FakeModelServer {
  /** e.g. http://127.0.0.1:PORT/v1 (use as model_endpoint / openai base_url). */
  baseUrl: string;
  /** `push(t1, t2, ...)` queues unkeyed turns; `push([t1, t2], { key })` queues turns for one agent. */
  push(...turns: FakeTurn[]): void;
  push(turns: FakeTurn[], options: PushOptions): void;
  /** Compute answers from the request (after the queues); `respond(null)` removes it. */
  respond(fn: Responder | null): void;
  /** Every chat-completions request received, in arrival order. */
  requests: RecordedRequest[];
  /** Turns still queued (unkeyed + keyed). */
  pending(): number;
  /** Resolves once at least `count` requests have arrived (for cancellation tests: cancel while one is held). */
  waitForRequests(count: number): Promise<RecordedRequest[]>;
  /** Every embeddings request received (its parsed body), in arrival order. */
  embeddingRequests: any[];
  /**
   * Answer embeddings requests with this error status (null: answer them), these headers (a 3xx's
   * `location`) and this error message.
   */
  failEmbeddings(status: number | null, headers?: Record<string, string>, message?: string): void;
  /** Clears queues, the responder and recorded requests. */
  reset(): void;
  close(): Promise<void>;
}

const DEFAULT_TURN: FakeTurn = { content: 'ok' };

/** One `chat.completion.chunk` with this delta, for a turn's `sse` frames. */
export function sseChunk(
  delta: Record<string, unknown>,
  finishReason: string | null = null,
): Record<string, unknown> {
  return {
    id: 'chatcmpl-fake-sse',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}

export const FAKE_EMBEDDING_DIM = 16;
const TOPICS = [
  'cat cats kitten kittens dog dogs puppy puppies pet pets animal animals vet',
  'pizza pasta food meal dinner lunch breakfast eat eating cook cooking recipe',
  'rain rainy sunny weather snow storm cloudy forecast',
  'flight flights train travel trip airport hotel vacation',
  'song songs music guitar piano concert',
  'code program bug bugs software typescript compiler',
].map((t) => new Set(t.split(' ')));

/**
 * The fake's embedding: one dimension per topic above (weight 1 per topic word), other words hashed over
 * the remaining dimensions with weight 0.3; L2-normalised. Deterministic.
 */
export function fakeEmbedding(text: string): number[] {
  const v = new Array<number>(FAKE_EMBEDDING_DIM).fill(0);
  for (const w of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const topic = TOPICS.findIndex((t) => t.has(w));
    if (topic >= 0) v[topic] += 1;
    else {
      let h = 0;
      for (const c of w) h = (h * 31 + c.charCodeAt(0)) >>> 0;
      v[TOPICS.length + (h % (FAKE_EMBEDDING_DIM - TOPICS.length))] += 0.3;
    }
  }
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => x / norm);
}

const approxTokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('');
  }
  return '';
}

function argsText(args: FakeToolCall['arguments']): string {
  return typeof args === 'string' ? args : JSON.stringify(args);
}

/** Splits text into up to `parts` non-empty pieces (a single piece when it is short). */
function split(text: string, parts = 3): string[] {
  if (text.length < 2) return [text];
  const size = Math.max(1, Math.ceil(text.length / parts));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function usageFor(rec: RecordedRequest, turn: FakeTurn) {
  const prompt = approxTokens(rec.messages.map((m) => textOf(m?.content)).join(''));
  const completion = approxTokens(
    (turn.content ?? '') +
      (turn.tool_calls ?? []).map((c) => c.name + argsText(c.arguments)).join(''),
  );
  const u = turn.usage ?? {};
  const prompt_tokens = u.prompt_tokens ?? prompt;
  const completion_tokens = u.completion_tokens ?? completion;
  return {
    prompt_tokens,
    completion_tokens,
    total_tokens: u.total_tokens ?? prompt_tokens + completion_tokens,
    ...(u.prompt_tokens_details ? { prompt_tokens_details: u.prompt_tokens_details } : {}),
    ...(u.completion_tokens_details
      ? { completion_tokens_details: u.completion_tokens_details }
      : {}),
  };
}

export async function startFakeModelServer(): Promise<FakeModelServer> {
  let queue: FakeTurn[] = [];
  let keyed = new Map<string, FakeTurn[]>();
  let responder: Responder | null = null;
  const requests: RecordedRequest[] = [];
  let waiters: { count: number; resolve: (r: RecordedRequest[]) => void }[] = [];
  const sockets = new Set<Socket>();
  let seq = 0;
  const embeddingRequests: any[] = [];
  let embeddingFailure: number | null = null;
  let embeddingFailureHeaders: Record<string, string> = {};
  let embeddingFailureMessage: string | undefined;
  const created = Math.floor(Date.now() / 1000);

  const notify = () => {
    waiters = waiters.filter((w) => {
      if (requests.length < w.count) return true;
      w.resolve(requests.slice());
      return false;
    });
  };

  async function pick(rec: RecordedRequest): Promise<FakeTurn> {
    for (const [key, turns] of keyed) {
      if (turns.length > 0 && rec.system.includes(key)) {
        rec.key = key;
        return turns.shift()!;
      }
    }
    if (queue.length > 0) return queue.shift()!;
    if (responder) {
      const t = await responder(rec);
      if (t) return t;
    }
    return DEFAULT_TURN;
  }

  const readBody = (req: IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });

  /** Waits `ms`, or less when the client goes away; returns false when it went away. */
  const hold = (ms: number, res: ServerResponse) =>
    new Promise<boolean>((resolve) => {
      const onClose = () => {
        clearTimeout(timer);
        resolve(false);
      };
      const timer = setTimeout(() => {
        res.off('close', onClose);
        resolve(true);
      }, ms);
      res.once('close', onClose);
    });

  function sendJson(
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(text);
  }

  function completion(rec: RecordedRequest, turn: FakeTurn) {
    const id = `chatcmpl-fake-${++seq}`;
    const toolCalls = (turn.tool_calls ?? []).map((c, i) => ({
      id: c.id ?? `call_fake_${seq}_${i}`,
      type: 'function' as const,
      function: { name: c.name, arguments: argsText(c.arguments) },
    }));
    const finish = turn.finish_reason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
    return { id, toolCalls, finish, usage: usageFor(rec, turn) };
  }

  function sendCompletion(res: ServerResponse, rec: RecordedRequest, turn: FakeTurn) {
    const c = completion(rec, turn);
    const message: Record<string, unknown> = { role: 'assistant', content: turn.content ?? null };
    if (turn.reasoning !== undefined) message.reasoning_content = turn.reasoning;
    if (c.toolCalls.length > 0) message.tool_calls = c.toolCalls;
    sendJson(
      res,
      200,
      {
        id: c.id,
        object: 'chat.completion',
        created,
        model: rec.model ?? 'fake',
        choices: [{ index: 0, message, finish_reason: c.finish, logprobs: null }],
        usage: c.usage,
      },
      turn.headers,
    );
  }

  function sendStream(res: ServerResponse, rec: RecordedRequest, turn: FakeTurn) {
    const c = completion(rec, turn);
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...turn.headers,
    });
    const frame = (extra: Record<string, unknown>) =>
      res.write(
        `data: ${JSON.stringify({ id: c.id, object: 'chat.completion.chunk', created, model: rec.model ?? 'fake', ...extra })}\n\n`,
      );
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      frame({ choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] });
    chunk({ role: 'assistant', content: '' });
    if (turn.reasoning) for (const r of split(turn.reasoning)) chunk({ reasoning_content: r });
    if (turn.content) for (const t of split(turn.content)) chunk({ content: t });
    c.toolCalls.forEach((call, index) => {
      chunk({
        tool_calls: [
          {
            index,
            id: call.id,
            type: 'function',
            function: { name: call.function.name, arguments: '' },
          },
        ],
      });
      for (const frag of split(call.function.arguments, 4)) {
        if (frag) chunk({ tool_calls: [{ index, function: { arguments: frag } }] });
      }
    });
    chunk({}, c.finish);
    if (rec.body?.stream_options?.include_usage) frame({ choices: [], usage: c.usage });
    res.end('data: [DONE]\n\n');
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && url.endsWith('/models')) {
      return sendJson(res, 200, {
        object: 'list',
        data: [{ id: 'fake-model', object: 'model', owned_by: 'fake' }],
      });
    }
    if (req.method === 'POST' && url.endsWith('/embeddings')) {
      let body: any;
      try {
        body = JSON.parse(await readBody(req));
      } catch {
        body = undefined;
      }
      embeddingRequests.push(body);
      if (embeddingFailure !== null)
        return sendJson(
          res,
          embeddingFailure,
          {
            error: {
              message: embeddingFailureMessage ?? `fake embeddings error ${embeddingFailure}`,
              type: 'server_error',
            },
          },
          embeddingFailureHeaders,
        );
      const input: unknown[] = typeof body?.input === 'string' ? [body.input] : (body?.input ?? []);
      return sendJson(res, 200, {
        object: 'list',
        model: body?.model ?? 'fake-embedding',
        data: input.map((t, index) => ({
          object: 'embedding',
          index,
          embedding: fakeEmbedding(String(t)),
        })),
        usage: { prompt_tokens: 1, total_tokens: 1 },
      });
    }
    if (req.method !== 'POST' || !url.endsWith('/chat/completions')) {
      return sendJson(res, 404, {
        error: { message: `no route ${req.method} ${url}`, type: 'invalid_request_error' },
      });
    }
    const text = await readBody(req);
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
    }
    const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
    const tools: any[] = Array.isArray(body?.tools) ? body.tools : [];
    const rec: RecordedRequest = {
      method: req.method,
      path: url,
      headers,
      body,
      model: body?.model,
      messages,
      system: messages
        .filter((m) => m?.role === 'system')
        .map((m) => textOf(m.content))
        .join('\n'),
      tools,
      toolNames: tools.map((t) => t?.function?.name as string),
      tool_choice: body?.tool_choice,
      stream: body?.stream === true,
    };
    requests.push(rec);
    notify();
    if (body === undefined) {
      return sendJson(res, 400, {
        error: { message: 'request body is not JSON', type: 'invalid_request_error' },
      });
    }

    const turn = await pick(rec);
    rec.turn = turn;
    if (turn.delayMs && turn.delayMs > 0) {
      const stillThere = await hold(turn.delayMs, res);
      if (!stillThere) return;
    }
    if (turn.dropConnection) {
      req.socket.destroy();
      return;
    }
    if (turn.status && turn.status >= 300 && turn.status < 400) {
      res.writeHead(turn.status, turn.headers ?? {});
      res.end();
      return;
    }
    if (turn.status && turn.status >= 400) {
      const errBody = turn.body ?? {
        error: {
          message: `fake error ${turn.status}`,
          type: turn.status >= 500 ? 'server_error' : 'invalid_request_error',
        },
      };
      return sendJson(res, turn.status, errBody, turn.headers);
    }
    if (turn.sse !== undefined) {
      res.writeHead(200, { 'content-type': 'text/event-stream', ...turn.headers });
      for (const f of turn.sse)
        res.write(typeof f === 'string' ? f : `data: ${JSON.stringify(f)}\n\n`);
      res.end(turn.sseDone === false ? undefined : 'data: [DONE]\n\n');
      return;
    }
    if (turn.raw !== undefined) {
      res.writeHead(turn.status ?? 200, { 'content-type': 'application/json', ...turn.headers });
      res.end(turn.raw);
      return;
    }
    if (rec.stream) sendStream(res, rec, turn);
    else sendCompletion(res, rec, turn);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, { error: { message: String(e), type: 'server_error' } });
      else res.destroy();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  function push(...args: unknown[]): void {
    if (Array.isArray(args[0])) {
      const turns = args[0] as FakeTurn[];
      const key = (args[1] as PushOptions | undefined)?.key;
      if (key === undefined) queue.push(...turns);
      else keyed.set(key, [...(keyed.get(key) ?? []), ...turns]);
      return;
    }
    queue.push(...(args as FakeTurn[]));
  }

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    push,
    respond(fn) {
      responder = fn;
    },
    requests,
    pending: () => queue.length + [...keyed.values()].reduce((n, q) => n + q.length, 0),
    waitForRequests(count) {
      return new Promise((resolve) => {
        waiters.push({ count, resolve });
        notify();
      });
    },
    embeddingRequests,
    failEmbeddings(status, headers = {}, message) {
      embeddingFailure = status;
      embeddingFailureHeaders = headers;
      embeddingFailureMessage = message;
    },
    reset() {
      queue = [];
      keyed = new Map();
      responder = null;
      requests.length = 0;
      embeddingRequests.length = 0;
      embeddingFailure = null;
      embeddingFailureHeaders = {};
      embeddingFailureMessage = undefined;
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
