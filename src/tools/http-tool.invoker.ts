import type { HttpToolSpec } from '../core/tools/tool-definition';
import { resolveHeaders } from './tool-declaration';

export interface HttpCallContext {
  agentId: string;
  runId: string;
  toolCallId: string;
  signal: AbortSignal;
}

const MAX_BODY_CHARS = 1_000_000;
const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * Calls an http tool: `{arguments, agent_id, run_id, tool_call_id}` as JSON (query parameters for GET),
 * the tool_call_id also as `Idempotency-Key`. A 2xx body is the result; anything else is an error return.
 * `${ENV}` header values are resolved here and nowhere else; no resolved value reaches a result or a log.
 */
export async function invokeHttpTool(
  spec: HttpToolSpec,
  args: Record<string, unknown>,
  ctx: HttpCallContext,
  secrets: Record<string, string>,
): Promise<{ status: 'success' | 'error'; value: string }> {
  const resolved = resolveHeaders(spec.headers, secrets);
  if ('missing' in resolved) {
    return {
      status: 'error',
      value: `tool is misconfigured: header ${resolved.header} names \${${resolved.missing}}, which is not set`,
    };
  }
  const payload = {
    arguments: args,
    agent_id: ctx.agentId,
    run_id: ctx.runId,
    tool_call_id: ctx.toolCallId,
  };
  const method = spec.method ?? 'POST';
  const url = new URL(spec.url);
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
  try {
    const res = await fetch(url, {
      method,
      body,
      // Declared headers first, so they cannot replace the idempotency key or the content type.
      headers: {
        ...resolved.headers,
        'content-type': 'application/json',
        accept: 'application/json, text/plain, */*',
        'idempotency-key': ctx.toolCallId,
      },
      // A redirect would carry the resolved headers to another place: refuse it.
      redirect: 'error',
      signal,
    });
    const text = (await res.text()).slice(0, MAX_BODY_CHARS);
    if (res.status >= 200 && res.status < 300) return { status: 'success', value: text };
    return {
      status: 'error',
      value: `HTTP ${res.status}${text ? `: ${text.slice(0, 2000)}` : ''}`,
    };
  } catch (e) {
    if (ctx.signal.aborted) return { status: 'error', value: 'cancelled' };
    if (timeout.aborted) return { status: 'error', value: `timed out after ${timeoutMs} ms` };
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (e as Error).message;
    return { status: 'error', value: `request failed: ${scrub(why, resolved.headers)}` };
  }
}

/** An error text must not echo a resolved header value (fetch quotes invalid header values). */
function scrub(text: string, headers: Record<string, string>): string {
  let out = text;
  for (const v of Object.values(headers)) if (v.length >= 4) out = out.split(v).join('[redacted]');
  return out;
}
