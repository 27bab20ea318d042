import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CLOCK } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG, OUTBOUND_HOST_POLICY } from '../config/config.module';
import type { ListedMcpTool } from '../core/mcp/mcp-tools';
import type { Clock } from '../core/ports';
import { APP_VERSION } from '../common/version';
import { Bucket, takeToken } from '../core/limits/token-bucket';
import { HostPolicy } from '../core/net/host-policy';
import { policyFetch, watchedFetch } from './watched-fetch';

/**
 * The MCP SDK, loaded with the first connection: with its zod schemas it is ~7 MB of heap, which a
 * server that never connects to an MCP server does not carry (and under load V8 sizes the heap at a
 * multiple of what stays live).
 */
async function loadSdk(): Promise<Sdk> {
  const [client, stdio, http, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  const loaded = {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    ErrorCode: types.ErrorCode,
    McpError: types.McpError,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
  };
  sdk = loaded;
  return loaded;
}
let sdk: Sdk | undefined;
type Sdk = {
  Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client;
  StdioClientTransport: typeof import('@modelcontextprotocol/sdk/client/stdio.js').StdioClientTransport;
  StreamableHTTPClientTransport: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport;
  ErrorCode: typeof import('@modelcontextprotocol/sdk/types.js').ErrorCode;
  McpError: typeof import('@modelcontextprotocol/sdk/types.js').McpError;
  ToolListChangedNotificationSchema: typeof import('@modelcontextprotocol/sdk/types.js').ToolListChangedNotificationSchema;
};

/** What a connection needs, secrets already resolved. Never logged, never returned. */
export interface McpEndpoint {
  serverId: string;
  serverName: string;
  /** The server's `updated_at`: a connection made for an older declaration is replaced. */
  version: number;
  transport:
    | { type: 'stdio'; command: string; args: string[]; env: Record<string, string> }
    | { type: 'streamable_http'; url: string; headers: Record<string, string> };
}

/** The server cannot be reached now (not started, backing off, pool full): an error tool return. */
export class McpUnavailableError extends Error {}

interface Connection {
  endpoint: McpEndpoint;
  client: Client;
  ready: Promise<void>;
  /** Connected and initialized; a close before that is a failed start, counted once where it fails. */
  established: boolean;
  closed: boolean;
  closedByUs: boolean;
  /** Why we dropped it mid-request (a broken or oversized response), told to the calls it failed. */
  dropped?: string;
  inFlight: number;
  lastUsed: number;
}

/** How long after a response body ended its answer may still be in the SDK's parser. */
const ANSWER_GRACE_MS = 500;

/** setTimeout's ceiling: the executor's tool timeout is what really bounds a call. */
const NO_SDK_TIMEOUT = 2_147_483_647;

/** Answers to a server's own requests (its pings; anything else is "method not found"): a few a second. */
const ANSWERS_PER_SECOND = 1;
const ANSWER_BURST = 5;

/**
 * One MCP client connection per server, opened on demand and kept warm. Stdio servers are a bounded
 * pool (the least recently used idle one is stopped to make room), stopped when idle and at shutdown;
 * one that dies is restarted by the next call, after a backoff that doubles while it keeps dying. No
 * call is ever retried here: the executor claimed its tool_call_id, so it runs at most once.
 */
@Injectable()
export class McpConnections implements OnModuleInit, OnApplicationShutdown {
  private readonly log = new Logger('Mcp');
  private readonly conns = new Map<string, Connection>();
  /** Consecutive deaths or failed starts per server, and when the last one happened. */
  private readonly failures = new Map<string, { count: number; at: number }>();
  private sweeper: NodeJS.Timeout | undefined;
  private toolsChanged: (serverId: string) => void = () => undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(OUTBOUND_HOST_POLICY) private readonly policy: HostPolicy,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /** Called with a server's id when it sends `notifications/tools/list_changed`. */
  onToolsChanged(fn: (serverId: string) => void): void {
    this.toolsChanged = fn;
  }

  onModuleInit(): void {
    const every = Math.min(30_000, (this.config.mcp.idle_seconds * 1000) / 2);
    this.sweeper = setInterval(() => this.stopIdle(), every);
    this.sweeper.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.all([...this.conns.keys()].map((id) => this.stop(id)));
  }

  async listTools(ep: McpEndpoint, maxTools: number): Promise<ListedMcpTool[]> {
    const conn = await this.connection(ep);
    const timeout = this.config.mcp.connect_timeout_seconds * 1000;
    return this.use(conn, async () => {
      const out: ListedMcpTool[] = [];
      let cursor: string | undefined;
      // A server that pages forever is cut off past the bound (plus one page to notice the excess).
      do {
        const page = await conn.client
          .listTools(cursor ? { cursor } : {}, { timeout })
          .catch((e: unknown) => {
            throw conn.dropped ? new Error(conn.dropped) : e;
          });
        out.push(...(page.tools as ListedMcpTool[]));
        cursor = page.nextCursor;
      } while (cursor && out.length <= maxTools);
      return out;
    });
  }

  /** `tools/call` with the executor's abort signal: aborting sends `notifications/cancelled`. */
  async callTool(
    ep: McpEndpoint,
    name: string,
    args: Record<string, unknown>,
    meta: Record<string, string>,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    const conn = await this.connection(ep, signal);
    return this.use(conn, async () => {
      const result = (await conn.client
        .callTool({ name, arguments: args, _meta: meta }, undefined, {
          signal,
          timeout: NO_SDK_TIMEOUT,
        })
        .catch((e: unknown) => {
          throw conn.dropped ? new Error(conn.dropped) : e;
        })) as CallToolResult;
      this.failures.delete(ep.serverId); // it answered: a later death starts the backoff afresh
      return result;
    });
  }

  /** A changed or deleted declaration: stop its connection and forget its failures (a fresh start). */
  async forget(serverId: string): Promise<void> {
    this.failures.delete(serverId);
    await this.stop(serverId);
  }

  private async stop(serverId: string): Promise<void> {
    const conn = this.conns.get(serverId);
    if (!conn) return;
    this.conns.delete(serverId);
    conn.closedByUs = true;
    await conn.client.close().catch(() => undefined);
  }

  private async use<T>(conn: Connection, fn: () => Promise<T>): Promise<T> {
    conn.inFlight++;
    conn.lastUsed = this.clock.now();
    try {
      return await fn();
    } finally {
      conn.inFlight--;
      conn.lastUsed = this.clock.now();
    }
  }

  private async connection(ep: McpEndpoint, signal?: AbortSignal): Promise<Connection> {
    const mcp = sdk ?? (await loadSdk());
    const existing = this.conns.get(ep.serverId);
    if (existing && existing.endpoint.version === ep.version && !existing.closed) {
      await existing.ready;
      return existing;
    }
    if (existing) await this.stop(ep.serverId);
    this.checkBackoff(ep);
    if (ep.transport.type === 'stdio') this.makeRoom();

    const client = new mcp.Client({ name: 'rulebound-agent-server', version: APP_VERSION });
    const conn: Connection = {
      endpoint: ep,
      client,
      ready: Promise.resolve(),
      established: false,
      closed: false,
      closedByUs: false,
      inFlight: 0,
      lastUsed: this.clock.now(),
    };
    client.onclose = () => {
      conn.closed = true;
      if (this.conns.get(ep.serverId) === conn) this.conns.delete(ep.serverId);
      if (conn.established && !conn.closedByUs) {
        this.recordFailure(ep.serverId);
        this.log.warn(`MCP server ${ep.serverName} closed the connection`);
      }
    };
    client.onerror = () => undefined; // transport errors surface as failed requests or a close
    client.setNotificationHandler(mcp.ToolListChangedNotificationSchema, () => {
      this.toolsChanged(ep.serverId);
      return Promise.resolve();
    });
    this.conns.set(ep.serverId, conn);
    const timeout = this.config.mcp.connect_timeout_seconds * 1000;
    conn.ready = client
      .connect(this.boundAnswers(this.transportFor(mcp, conn)), {
        timeout,
        ...(signal ? { signal } : {}),
      })
      .then(() => {
        conn.established = true;
      })
      .catch(async (e: unknown) => {
        conn.closedByUs = true;
        if (this.conns.get(ep.serverId) === conn) this.conns.delete(ep.serverId);
        await client.close().catch(() => undefined);
        if (!signal?.aborted) this.recordFailure(ep.serverId);
        throw new McpUnavailableError(`could not connect: ${describe(e)}`);
      });
    await conn.ready;
    return conn;
  }

  private transportFor(mcp: Sdk, conn: Connection): Transport {
    const t = conn.endpoint.transport;
    const max = this.config.mcp.max_message_bytes;
    if (t.type === 'stdio') {
      // The SDK adds only HOME, LOGNAME, PATH, SHELL, TERM and USER from our environment.
      const transport = new mcp.StdioClientTransport({
        command: t.command,
        args: t.args,
        env: t.env,
        stderr: 'ignore',
        // what it buffers of one line (a message) from the server, 10 MiB by default
        maxBufferSize: max,
      });
      // Past it the SDK reports this error (known only by its text) and closes the transport: the calls
      // this fails are told why, as over HTTP.
      transport.onerror = (e) => {
        if (/ReadBuffer exceeded/.test(e.message))
          this.drop(conn, `a message is over mcp.max_message_bytes (${max})`);
      };
      return transport;
    }
    const awaiting = new Set<unknown>();
    const transport = new mcp.StreamableHTTPClientTransport(new URL(t.url), {
      // A redirect would carry the resolved headers elsewhere.
      requestInit: { headers: t.headers, redirect: 'error' },
      fetch: watchedFetch(
        max,
        {
          overflow: () => this.drop(conn, `the response is over mcp.max_message_bytes (${max})`),
          request: (id) => awaiting.add(id),
          cancelled: (id) => awaiting.delete(id),
          // The SDK parses a body after it has passed through here: give it a moment to find the answer.
          bodyEnded: (id) =>
            setTimeout(() => {
              if (awaiting.has(id))
                this.drop(conn, 'the server closed the connection before answering');
            }, ANSWER_GRACE_MS).unref(),
        },
        policyFetch(this.policy),
      ),
    });
    // Seen before the SDK's own handler (it chains the one set before connecting).
    transport.onmessage = (m) => {
      if ('id' in m && ('result' in m || 'error' in m)) awaiting.delete(m.id);
    };
    return transport;
  }

  /**
   * The SDK answers every request a server sends, and over HTTP each answer is a request of ours: a server
   * asking in bulk (thousands of pings in one response, more in the answers' responses) would have us
   * flood it. Past a few a second, answers are dropped unsent (a server waiting for one times out).
   */
  private boundAnswers(transport: Transport): Transport {
    const send = transport.send.bind(transport);
    let bucket: Bucket | undefined;
    transport.send = (message, options) => {
      if ('method' in message) return send(message, options);
      const taken = takeToken(bucket, ANSWERS_PER_SECOND, ANSWER_BURST, this.clock.now());
      bucket = taken.bucket;
      return taken.allowed ? send(message, options) : Promise.resolve();
    };
    return transport;
  }

  /** Ends a connection that broke mid-request; its pending calls fail with `why` (counted as a failure). */
  private drop(conn: Connection, why: string): void {
    if (conn.closed || this.conns.get(conn.endpoint.serverId) !== conn) return;
    conn.dropped = why;
    this.recordFailure(conn.endpoint.serverId);
    void this.stop(conn.endpoint.serverId);
  }

  /** After n deaths in a row the next start waits 1 s · 2^(n-2), capped; the first restart is immediate. */
  private checkBackoff(ep: McpEndpoint): void {
    const f = this.failures.get(ep.serverId);
    if (!f || f.count < 2) return;
    const capMs = this.config.mcp.restart_backoff_max_seconds * 1000;
    const waitMs = Math.min(capMs, 1000 * 2 ** (f.count - 2));
    const left = f.at + waitMs - this.clock.now();
    if (left > 0)
      throw new McpUnavailableError(
        `it failed ${f.count} times in a row; the next start is allowed in ${Math.ceil(left / 1000)} s`,
      );
  }

  private recordFailure(serverId: string): void {
    const f = this.failures.get(serverId);
    this.failures.set(serverId, { count: (f?.count ?? 0) + 1, at: this.clock.now() });
  }

  private makeRoom(): void {
    const stdio = [...this.conns.entries()].filter(
      ([, c]) => c.endpoint.transport.type === 'stdio',
    );
    if (stdio.length < this.config.mcp.max_running_stdio) return;
    const idle = stdio
      .filter(([, c]) => c.inFlight === 0)
      .sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    if (!idle.length)
      throw new McpUnavailableError(
        `all ${this.config.mcp.max_running_stdio} stdio MCP servers (mcp.max_running_stdio) are busy`,
      );
    void this.stop(idle[0][0]);
  }

  /** Stops the servers unused for `mcp.idle_seconds` (the sweeper calls it). */
  stopIdle(): void {
    const cutoff = this.clock.now() - this.config.mcp.idle_seconds * 1000;
    for (const [id, c] of this.conns)
      if (c.inFlight === 0 && c.lastUsed < cutoff) void this.stop(id);
  }
}

/** An SDK error as one line; a connection that closed mid-request says so plainly. */
export function describe(e: unknown): string {
  // an SDK error comes from a connection, so the SDK is loaded
  if (sdk && e instanceof sdk.McpError && e.code === (sdk.ErrorCode.ConnectionClosed as number))
    return 'the server closed the connection';
  // the SDK's schema errors are a JSON list over several lines: kept whole, on one line
  const msg = e instanceof Error ? e.message : String(e);
  return msg.replace(/\s+/g, ' ').trim().slice(0, 500);
}
