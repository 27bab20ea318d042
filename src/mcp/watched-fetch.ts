import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Readable } from 'node:stream';
import type { HostPolicy } from '../core/net/host-policy';
import { send } from '../tools/http-tool.invoker';

export interface FetchWatch {
  /** A response body went past the bound: it errors here, the caller drops the connection. */
  overflow(): void;
  /** A POST carrying JSON-RPC request `id` is being sent. */
  request(id: unknown): void;
  /** We cancelled request `id` (`notifications/cancelled`): no answer is owed any more. */
  cancelled(id: unknown): void;
  /** The body of that request's response ended or broke (whether the answer was in it is the caller's to know). */
  bodyEnded(id: unknown): void;
}

/**
 * fetch for the streamable HTTP transport. Each response body stops at `maxBytes` (the SDK would buffer
 * a message whole), and the end of each request's response is reported: the SDK alone leaves a request
 * waiting forever when its event stream breaks before the answer, which the caller turns into a failure.
 */
export function watchedFetch(
  maxBytes: number,
  watch: FetchWatch,
  base: FetchLike = fetch,
): FetchLike {
  return async (url, init) => {
    const { id, cancels } = parse(init);
    if (id !== undefined) watch.request(id);
    if (cancels !== undefined) watch.cancelled(cancels);
    const ended = () => {
      if (id !== undefined) watch.bodyEnded(id);
    };
    let res: Response;
    try {
      res = await base(url, init);
    } catch (e) {
      ended();
      throw e;
    }
    if (!res.body) {
      ended();
      return res;
    }
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let seen = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(ctl) {
        try {
          const { value, done } = await reader.read();
          if (done) {
            ctl.close();
            ended();
            return;
          }
          seen += value.byteLength;
          if (seen <= maxBytes) return ctl.enqueue(value);
          ctl.error(new Error(`the response is over mcp.max_message_bytes (${maxBytes})`));
          void reader.cancel().catch(() => undefined);
          watch.overflow();
        } catch (e) {
          ctl.error(e);
          ended();
        }
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  };
}

/** In a POST body: the id of a JSON-RPC request, or the request a `notifications/cancelled` cancels. */
function parse(init: RequestInit | undefined): { id?: unknown; cancels?: unknown } {
  if (init?.method !== 'POST' || typeof init.body !== 'string') return {};
  try {
    const msg = JSON.parse(init.body) as {
      id?: unknown;
      method?: unknown;
      params?: { requestId?: unknown };
    };
    if (msg.method === 'notifications/cancelled') return { cancels: msg.params?.requestId };
    return msg.id !== undefined && typeof msg.method === 'string' ? { id: msg.id } : {};
  } catch {
    return {};
  }
}

/**
 * fetch on the http tools' request path: every connection is checked against the operator's outbound
 * host policy after DNS resolution (a tenant's MCP server URL cannot reach a denied address), no
 * redirect is followed, no socket is reused for another host.
 */
export function policyFetch(policy: HostPolicy): FetchLike {
  return async (url, init) => {
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((v, k) => (headers[k] = v));
    const body = typeof init?.body === 'string' ? init.body : undefined;
    const signal = init?.signal ?? new AbortController().signal;
    const res = await send(new URL(url), init?.method ?? 'GET', headers, body, signal, policy);
    const status = res.statusCode ?? 502;
    const out = new Headers();
    for (const [k, v] of Object.entries(res.headers))
      if (v !== undefined) out.set(k, Array.isArray(v) ? v.join(', ') : v);
    const nullBody = status === 204 || status === 205 || status === 304;
    if (nullBody) res.resume();
    return new Response(nullBody ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), {
      status,
      statusText: res.statusMessage,
      headers: out,
    });
  };
}
