import { lookup as dnsLookup, LookupAddress, promises as dnsPromises } from 'node:dns';
import * as http from 'node:http';
import * as https from 'node:https';
import { isIP, LookupFunction } from 'node:net';
import { HostPolicy } from '../core/net/host-policy';
import { literalValuesOf, referencedValuesOf } from '../core/secrets/declared-values';
import { redactor } from '../core/secrets/redactor';
import type { HttpToolSpec } from '../core/tools/tool-definition';
import { resolveHeaders } from './tool-declaration';

export interface HttpCallContext {
  agentId: string;
  runId: string;
  toolCallId: string;
  signal: AbortSignal;
}

/** The operator's bounds on an http tool call (`tools.http`). */
export interface HttpCallLimits {
  maxResponseBytes: number;
  maxRedirects: number;
  policy: HostPolicy;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const ERROR_TEXT_CHARS = 2000;

type Result = { status: 'success' | 'error'; value: string };

/** A connection the outbound policy refuses; its message names host and address only. */
export class HostRefused extends Error {}
/** The answer went past `maxResponseBytes`. */
class TooLarge extends Error {}

/**
 * Calls an http tool: `{arguments, agent_id, run_id, tool_call_id}` as JSON (query parameters for GET),
 * the tool_call_id also as `Idempotency-Key`. A 2xx body is the result; anything else is an error return.
 * `${NAME}` header values are resolved here and nowhere else; no resolved value reaches a result or a log:
 * an answer that echoes one (or a header's literal value) shows `[redacted:NAME]` instead.
 * Every connection (the first and each redirect) is checked against the outbound policy after DNS
 * resolution; the body is read as it streams and dropped past `maxResponseBytes`.
 */
export async function invokeHttpTool(
  spec: HttpToolSpec,
  args: Record<string, unknown>,
  ctx: HttpCallContext,
  secrets: Record<string, string>,
  limits: HttpCallLimits,
): Promise<Result> {
  const resolved = resolveHeaders(spec.headers, secrets);
  if ('missing' in resolved) {
    return {
      status: 'error',
      value: `tool is misconfigured: header ${resolved.header} names \${${resolved.missing}}, which is not set`,
    };
  }
  // the body, the error text: nothing the tenant or the model sees carries what the call sent (the
  // literals first: a tenant's secret cannot be set to probe an operator's file's literal key)
  const headers = spec.headers ?? {};
  const redact = redactor(literalValuesOf(headers), referencedValuesOf(headers, secrets));
  const payload = {
    arguments: args,
    agent_id: ctx.agentId,
    run_id: ctx.runId,
    tool_call_id: ctx.toolCallId,
  };
  let method: string = spec.method ?? 'POST';
  let url = new URL(spec.url);
  let body: string | undefined;
  if (method === 'GET') {
    for (const [k, v] of Object.entries(payload))
      url.searchParams.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  } else {
    body = JSON.stringify(payload);
  }
  const timeoutMs = spec.timeout_ms ?? DEFAULT_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([ctx.signal, timeout]);
  // Declared headers first, so they cannot replace the idempotency key or the content type.
  const fixed = {
    'content-type': 'application/json',
    accept: 'application/json, text/plain, */*',
    'idempotency-key': ctx.toolCallId,
  };
  let declared = resolved.headers;
  const origin = url.origin;
  try {
    for (let hop = 0; ; hop++) {
      const res = await send(url, method, { ...declared, ...fixed }, body, signal, limits.policy);
      const location = res.headers.location;
      if (res.statusCode && res.statusCode >= 300 && res.statusCode < 400 && location) {
        res.destroy();
        if (hop >= limits.maxRedirects)
          return {
            status: 'error',
            value: `too many redirects (more than ${limits.maxRedirects})`,
          };
        url = new URL(location, url);
        if (url.protocol !== 'http:' && url.protocol !== 'https:')
          return {
            status: 'error',
            value: `redirected to a ${url.protocol} URL, which is refused`,
          };
        // The declared headers may carry secrets: they go only to the tool's own origin.
        if (url.origin !== origin) declared = {};
        if (
          res.statusCode === 303 ||
          ((res.statusCode === 301 || res.statusCode === 302) && method !== 'GET')
        ) {
          method = 'GET';
          body = undefined;
        }
        continue;
      }
      const text = redact(await readCapped(res, limits.maxResponseBytes));
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) return { status: 'success', value: text };
      return {
        status: 'error',
        value: `HTTP ${status}${text ? `: ${text.slice(0, ERROR_TEXT_CHARS)}` : ''}`,
      };
    }
  } catch (e) {
    if (ctx.signal.aborted) return { status: 'error', value: 'cancelled' };
    if (timeout.aborted) return { status: 'error', value: `timed out after ${timeoutMs} ms` };
    if (e instanceof TooLarge)
      return { status: 'error', value: `response exceeded ${limits.maxResponseBytes} bytes` };
    if (e instanceof HostRefused)
      return { status: 'error', value: `request refused: ${e.message}` };
    const err = e as NodeJS.ErrnoException;
    return {
      status: 'error',
      value: `request failed: ${redact(err.code ?? err.message)}`,
    };
  }
}

/** One request; resolves with the response (its body not read yet). MCP's HTTP transport uses it too. */
export function send(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  signal: AbortSignal,
  policy: HostPolicy,
): Promise<http.IncomingMessage> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // An IP literal is never looked up: check it here.
  const literal = isIP(host) ? policy.refusal(host, host) : null;
  if (literal) return Promise.reject(new HostRefused(literal));
  const lib = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(url, {
      method,
      headers:
        body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
      signal,
      lookup: guardedLookup(policy),
      agent: false, // a pooled socket was checked for another host name: never reuse one
    });
    req.on('response', resolve);
    req.on('error', reject);
    req.end(body);
  });
}

/** What one `postOnce` got: the answer's status, why it failed as one line (null: a 2xx), refused by policy. */
export interface PostOutcome {
  statusCode: number | null;
  error: string | null;
  /** The operator's policy refused the host: no retry will do better. */
  refused: boolean;
}

/**
 * One POST whose answer nobody reads (a webhook delivery, a run's callback): no redirect is followed
 * (http.request never does: it would send the body elsewhere), the answer's body is dropped.
 */
export async function postOnce(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  policy: HostPolicy,
): Promise<PostOutcome> {
  try {
    const target = new URL(url);
    const res = await send(target, 'POST', headers, body, AbortSignal.timeout(timeoutMs), policy);
    const statusCode = res.statusCode ?? 0;
    res.destroy();
    const ok = statusCode >= 200 && statusCode < 300;
    return {
      statusCode,
      error: ok ? null : `the target answered HTTP ${statusCode}`,
      refused: false,
    };
  } catch (e) {
    if (e instanceof HostRefused)
      return { statusCode: null, error: `refused: ${e.message}`, refused: true };
    const errno = (e as NodeJS.ErrnoException).code;
    const text = (errno ? `${errno}: ` : '') + (e instanceof Error ? e.message : String(e));
    return { statusCode: null, error: text, refused: false };
  }
}

/**
 * Why the policy refuses `url`'s host, resolved now (an IP literal as itself), or null: allowed, or a name
 * that does not resolve (each connection checks again). Registration-time checks use it.
 */
export async function hostRefusal(url: URL, policy: HostPolicy): Promise<string | null> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return policy.refusal(host, host);
  try {
    return firstRefusal(policy, host, await dnsPromises.lookup(host, { all: true }));
  } catch {
    return null;
  }
}

const firstRefusal = (policy: HostPolicy, host: string, addresses: LookupAddress[]) =>
  addresses.map((a) => policy.refusal(host, a.address)).find((why) => why !== null) ?? null;

/** dns.lookup, then the policy on every address it gives: a name that resolves to a denied address fails. */
function guardedLookup(policy: HostPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const why = firstRefusal(policy, hostname, addresses);
      if (why) return callback(new HostRefused(why), '', 0);
      if (options.all)
        return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/** The body as text, at most `max` bytes: past it the socket is destroyed, so memory stays bounded. */
function readCapped(res: http.IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    res.on('data', (c: Buffer) => {
      bytes += c.length;
      if (bytes > max) {
        res.destroy();
        reject(new TooLarge());
      } else chunks.push(c);
    });
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
    res.on('close', () => {
      if (!res.complete && bytes <= max) reject(new Error('ECONNRESET'));
    });
  });
}
