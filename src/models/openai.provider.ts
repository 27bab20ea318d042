import { readBodyCapped } from '../common/bounded-body';
import { type Redact, redactor } from '../core/secrets/redactor';
import { countTokens } from './token-count';
import {
  ChatMessage,
  ModelAnswerBounds,
  ModelError,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ModelToolCall,
  ModelUsage,
} from './model-provider';

/** Sleeps `ms`; rejects (any error) when `signal` aborts first. Injected so tests never really wait. */
export type SleepFn = (ms: number, signal?: AbortSignal) => Promise<void>;

/** Waits until a call may go to the provider (its rate); rejects (any error) when `signal` aborts first. */
export type AdmitFn = (signal?: AbortSignal) => Promise<void>;

export interface OpenAiProviderOptions {
  /** Sent as `Authorization: Bearer …`; never logged, never part of an error message. */
  apiKey: string | null;
  /** The provider's base URL (e.g. https://api.openai.com/v1): the only place this provider calls. */
  baseUrl: string;
  /** What the endpoint's answer may hold (config `models.*`). */
  bounds: ModelAnswerBounds;
  timeoutMs: number;
  maxRetries: number;
  /** Waits for the provider's rate before each attempt (`requests_per_minute`); none: no bound. */
  admit?: AdmitFn;
  sleep?: SleepFn;
  /** In [0, 1): the backoff jitter. */
  random?: () => number;
  /** Epoch ms, to read an HTTP-date `Retry-After`. */
  now?: () => number;
  /** Starts the per-call timeout; returns its cancel function. Injected so tests fire it by hand. */
  startTimer?: (ms: number, onTimeout: () => void) => () => void;
  /** First backoff delay; doubled per attempt up to `maxBackoffMs`. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
}

const realTimer = (ms: number, onTimeout: () => void) => {
  const t = setTimeout(onTimeout, ms);
  return () => clearTimeout(t);
};

export const realSleep: SleepFn = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('aborted'));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** A failure worth another attempt (connection error, timeout, 429, 5xx). */
class Retryable extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

interface ToolCallAcc {
  id?: string;
  name?: string;
  args: string;
}

/** OpenAI-compatible `POST {endpoint}/chat/completions`, with retries, timeout, cancellation and SSE streaming. */
export class OpenAiProvider implements ModelProvider {
  private readonly sleep: SleepFn;
  private readonly random: () => number;
  private readonly now: () => number;
  private readonly startTimer: (ms: number, onTimeout: () => void) => () => void;
  private readonly baseBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly bounds: ModelAnswerBounds;
  private readonly redact: Redact;

  constructor(private readonly opts: OpenAiProviderOptions) {
    this.bounds = opts.bounds;
    this.redact = keyRedactor(opts.apiKey);
    this.sleep = opts.sleep ?? realSleep;
    this.random = opts.random ?? Math.random;
    this.now = opts.now ?? Date.now;
    this.startTimer = opts.startTimer ?? realTimer;
    this.baseBackoffMs = opts.baseBackoffMs ?? 500;
    this.maxBackoffMs = opts.maxBackoffMs ?? 8_000;
  }

  async complete(req: ModelRequest): Promise<ModelResponse> {
    // Never the agent's llm_config.model_endpoint: the key goes only where the operator configured.
    const url = `${this.opts.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    const body = JSON.stringify(this.buildBody(req));
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: req.stream ? 'text/event-stream' : 'application/json',
    };
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;

    let last: Retryable | undefined;
    for (let attempt = 0; attempt <= this.opts.maxRetries; attempt++) {
      if (attempt > 0 && last) {
        try {
          await this.sleep(this.delayFor(attempt, last), req.signal);
        } catch {
          throw cancelled();
        }
      }
      if (req.signal?.aborted) throw cancelled();
      if (this.opts.admit)
        try {
          await this.opts.admit(req.signal);
        } catch {
          throw cancelled();
        }
      try {
        return await this.attempt(url, body, headers, req);
      } catch (e) {
        if (!(e instanceof Retryable)) throw e;
        last = e;
      }
    }
    const tries = this.opts.maxRetries + 1;
    throw new ModelError(
      'llm_api_error',
      this.redact(
        `${last?.message ?? 'model call failed'} (after ${tries} attempt${tries > 1 ? 's' : ''})`,
      ),
      last?.status,
    );
  }

  private buildBody(req: ModelRequest): Json {
    const cfg = req.llmConfig;
    const body: Json = { model: cfg.model, messages: req.messages };
    if (req.tools.length > 0) {
      body.tools = req.tools;
      const tc = req.toolChoice;
      body.tool_choice =
        typeof tc === 'object' ? { type: 'function', function: { name: tc.name } } : tc;
    }
    if (typeof cfg.max_tokens === 'number' && cfg.max_tokens > 0) body.max_tokens = cfg.max_tokens;
    if (typeof cfg.temperature === 'number') body.temperature = cfg.temperature;
    if (req.stream) {
      body.stream = true;
      body.stream_options = { include_usage: true };
    }
    return body;
  }

  /** Retry-After when the server gave one (capped), else exponential backoff with jitter (50–100 %). */
  private delayFor(attempt: number, err: Retryable): number {
    if (err.retryAfterMs !== undefined)
      return Math.min(err.retryAfterMs, this.bounds.max_retry_after_seconds * 1000);
    const exp = Math.min(this.maxBackoffMs, this.baseBackoffMs * 2 ** (attempt - 1));
    return Math.round(exp * (0.5 + this.random() * 0.5));
  }

  private async attempt(
    url: string,
    body: string,
    headers: Record<string, string>,
    req: ModelRequest,
  ): Promise<ModelResponse> {
    const timeoutMs = req.timeoutMs ?? this.opts.timeoutMs;
    const ac = new AbortController();
    let timedOut = false;
    const stopTimer = this.startTimer(timeoutMs, () => {
      timedOut = true;
      ac.abort();
    });
    const onCancel = () => ac.abort();
    req.signal?.addEventListener('abort', onCancel, { once: true });
    // Deltas already handed to the caller cannot be taken back: no retry after the first one.
    const emitted = { any: false };
    const fail = (e: unknown): never => {
      if (req.signal?.aborted) throw cancelled();
      if (e instanceof ModelError || e instanceof Retryable) throw e;
      const msg = timedOut
        ? `model call timed out after ${Math.round(timeoutMs / 1000)} s`
        : `cannot reach the model endpoint: ${describe(e)}`;
      if (emitted.any) throw new ModelError('llm_api_error', this.redact(msg));
      throw new Retryable(msg);
    };
    try {
      let res: Response;
      try {
        // never followed: a redirect would re-send the whole prompt to wherever it points
        res = await fetch(url, {
          method: 'POST',
          headers,
          body,
          signal: ac.signal,
          redirect: 'manual',
        });
      } catch (e) {
        return fail(e);
      }
      try {
        if (isRedirect(res.status)) throw this.redirected(res);
        if (!res.ok) throw await this.httpError(res);
        const type = res.headers.get('content-type') ?? '';
        if (req.stream && type.includes('text/event-stream') && res.body) {
          return await this.readStream(res.body, req, emitted);
        }
        const read = await readBodyCapped(res, this.bounds.max_response_bytes);
        if (read.exceeded) throw tooLarge(this.bounds.max_response_bytes);
        return this.parseCompletion(read.text, req);
      } catch (e) {
        return fail(e);
      }
    } finally {
      stopTimer();
      req.signal?.removeEventListener('abort', onCancel);
    }
  }

  /** Whether an error says the context was too long, looked for where an error answer is read. */
  private overflows(body: string): boolean {
    return isContextOverflow(body, this.bounds.max_error_body_bytes);
  }

  /** A 3xx is not followed: the call fails at once, naming where the endpoint pointed. */
  private redirected(res: Response): ModelError {
    void res.body?.cancel().catch(() => undefined);
    return new ModelError('llm_api_error', redirectMessage('model', res, this.redact), res.status);
  }

  private async httpError(res: Response): Promise<Error> {
    let text = '';
    try {
      const read = await readBodyCapped(res, this.bounds.max_error_body_bytes);
      text = read.exceeded ? '' : read.text;
    } catch {
      // the status alone will do
    }
    const detail = providerMessage(text, this.redact) || res.statusText || 'no details';
    const msg = `model endpoint answered ${res.status}: ${detail}`;
    if (res.status === 429 || res.status >= 500) {
      return new Retryable(msg, res.status, this.retryAfter(res.headers));
    }
    return new ModelError(
      this.overflows(text || detail) ? 'context_window_exceeded' : 'llm_api_error',
      this.redact(detail),
      res.status,
    );
  }

  /** `retry-after-ms` (OpenAI), else `Retry-After` in seconds or as an HTTP date. */
  private retryAfter(h: Headers): number | undefined {
    const ms = Number(h.get('retry-after-ms'));
    if (h.get('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
    const v = h.get('retry-after')?.trim();
    if (!v) return undefined;
    if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
    const at = Date.parse(v);
    return Number.isNaN(at) ? undefined : Math.max(0, at - this.now());
  }

  private parseCompletion(text: string, req: ModelRequest): ModelResponse {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw invalid('the model endpoint answered something that is not JSON');
    }
    if (!isObj(json)) throw invalid('the model endpoint answered something that is not an object');
    if (isObj(json.error))
      throw new ModelError(
        this.overflows(text) ? 'context_window_exceeded' : 'llm_api_error',
        providerMessage(text, this.redact),
      );
    const choice = Array.isArray(json.choices) ? (json.choices[0] as unknown) : undefined;
    if (!isObj(choice) || !isObj(choice.message)) throw invalid('the model answer has no choices');
    const m = choice.message;
    const calls: ToolCallAcc[] = (Array.isArray(m.tool_calls) ? m.tool_calls : []).map(
      (c: unknown) => {
        const fn = isObj(c) && isObj(c.function) ? c.function : {};
        const args = fn.arguments;
        return {
          id: isObj(c) && typeof c.id === 'string' ? c.id : undefined,
          name: typeof fn.name === 'string' ? fn.name : undefined,
          args: typeof args === 'string' ? args : args === undefined ? '' : JSON.stringify(args),
        };
      },
    );
    // a refusal (OpenAI's `refusal`, no content) is what the model said: the reply, as Letta reads one
    const said = textOf(m.content);
    return this.finish(
      said || strOrNull(m.refusal) || said,
      strOrNull(m.reasoning_content) ?? strOrNull(m.reasoning),
      calls,
      strOrNull(choice.finish_reason),
      json.usage,
      req,
    );
  }

  private async readStream(
    stream: ReadableStream<Uint8Array>,
    req: ModelRequest,
    emitted: { any: boolean },
  ): Promise<ModelResponse> {
    const decoder = new TextDecoder();
    const lines = new SseLines();
    let content = '';
    let reasoning = '';
    let finish: string | null = null;
    let usage: unknown;
    let sawChunk = false;
    let done = false;
    // by the delta's index: an index is the endpoint's to choose, so never an array's (index 1e9 walked one)
    const calls = new Map<number, ToolCallAcc>();
    /** The index the last tool-call delta was for. */
    let current: number | undefined;
    /**
     * A delta without an index continues the current call (the first one: 0), as Letta reads it (endpoints
     * that send one call in fragments and no index); one that brings another id than the current call's
     * is a call of its own (endpoints that send whole calls without an index).
     */
    const indexWithout = (tc: Json): number => {
      const cur = current === undefined ? undefined : calls.get(current);
      const id = typeof tc.id === 'string' && tc.id ? tc.id : undefined;
      if (cur?.id && id && id !== cur.id) return Math.max(...calls.keys()) + 1;
      return current ?? 0;
    };

    const onData = (data: string) => {
      if (data === '[DONE]') {
        done = true;
        return;
      }
      let chunk: unknown;
      try {
        chunk = JSON.parse(data);
      } catch {
        throw invalid('the model stream sent a chunk that is not JSON');
      }
      if (!isObj(chunk)) return;
      if (isObj(chunk.error))
        throw new ModelError(
          // after text went out, the call cannot be made again: an overflow then is just an error
          !emitted.any && this.overflows(data) ? 'context_window_exceeded' : 'llm_api_error',
          providerMessage(data, this.redact),
        );
      if (!sawChunk) req.onFirstChunk?.();
      sawChunk = true;
      if (isObj(chunk.usage)) usage = chunk.usage;
      const choice: unknown = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
      if (!isObj(choice)) return;
      if (typeof choice.finish_reason === 'string') finish = choice.finish_reason;
      const d = isObj(choice.delta) ? choice.delta : {};
      const r = strOrNull(d.reasoning_content) ?? strOrNull(d.reasoning);
      if (r) reasoning += r;
      // a refusal streams as `delta.refusal` instead of `delta.content`: the reply all the same
      for (const t of [d.content, d.refusal]) {
        if (typeof t !== 'string' || t === '') continue;
        content += t;
        emitted.any = true;
        req.onTextDelta?.(t);
      }
      if (Array.isArray(d.tool_calls)) {
        for (const tc of d.tool_calls as unknown[]) {
          if (!isObj(tc)) continue;
          const index = tc.index ?? indexWithout(tc);
          if (!isToolCallIndex(index, this.bounds.max_tool_call_index))
            throw invalid(
              `the model stream sent a tool call with index ${JSON.stringify(index).slice(0, 40)} (a whole number from 0 to ${this.bounds.max_tool_call_index} expected: models.max_tool_call_index)`,
            );
          current = index;
          let acc = calls.get(index);
          if (!acc) calls.set(index, (acc = { args: '' }));
          if (typeof tc.id === 'string' && tc.id) acc.id = tc.id;
          const fn = isObj(tc.function) ? tc.function : {};
          // a name may come in fragments ("send_", "message"); some endpoints repeat the whole name instead
          if (typeof fn.name === 'string' && fn.name && fn.name !== acc.name)
            acc.name = (acc.name ?? '') + fn.name;
          if (typeof fn.arguments === 'string') acc.args += fn.arguments;
        }
      }
    };

    const reader = stream.getReader();
    let bytes = 0;
    try {
      while (!done) {
        const { value, done: eof } = await reader.read();
        if (eof) break;
        bytes += value.byteLength;
        if (bytes > this.bounds.max_response_bytes) {
          done = true; // cancels the stream below
          throw tooLarge(this.bounds.max_response_bytes);
        }
        for (const line of lines.push(decoder.decode(value, { stream: true }))) {
          if (done) break;
          if (line.startsWith('data:')) onData(line.slice(5).trim());
        }
      }
      const last = lines.end();
      if (!done && last.startsWith('data:')) onData(last.slice(5).trim());
    } finally {
      reader.releaseLock();
      if (done) await stream.cancel().catch(() => undefined);
    }
    if (!sawChunk) throw invalid('the model stream ended without any chunk');
    return this.finish(
      content || null,
      reasoning || null,
      [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => c),
      finish,
      usage,
      req,
    );
  }

  private finish(
    content: string | null,
    reasoning: string | null,
    calls: ToolCallAcc[],
    finishReason: string | null,
    usage: unknown,
    req: ModelRequest,
  ): ModelResponse {
    const toolCalls: ModelToolCall[] = calls.map((c) => {
      if (!c.name) throw invalid('the model sent a tool call without a function name');
      return {
        id: c.id ?? '', // '' when the server gave none: the processor gives every call an id of its own (uniqueCallIds)
        name: c.name,
        argumentsText: c.args,
      };
    });
    const empty = (content === null || content === '') && toolCalls.length === 0;
    if (empty && finishReason === 'length') {
      throw new ModelError('max_tokens_exceeded', 'the model hit its max_tokens before answering');
    }
    if (empty && !reasoning) throw invalid('the model answered neither text nor tool calls');
    return {
      content: content === '' ? null : content,
      reasoning,
      toolCalls,
      usage: normaliseUsage(usage, req.messages, content, toolCalls, this.bounds.max_usage_tokens),
      finishReason,
    };
  }
}

/** An SSE stream's text as lines: each ended by CRLF, LF or CR, as the SSE spec allows all three. */
export class SseLines {
  private buf = '';

  /** The lines `text` completes; the rest waits for the next text (a CR last too: an LF may follow it). */
  push(text: string): string[] {
    const buf = this.buf + text;
    const out: string[] = [];
    let pos = 0;
    let cr = buf.indexOf('\r');
    let lf = buf.indexOf('\n');
    for (;;) {
      const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
      if (end < 0 || (end === cr && end === buf.length - 1)) break;
      out.push(buf.slice(pos, end));
      pos = end + (end === cr && lf === end + 1 ? 2 : 1);
      // each found once: a stream with no CR at all is not scanned for one at every line
      if (cr >= 0 && cr < pos) cr = buf.indexOf('\r', pos);
      if (lf >= 0 && lf < pos) lf = buf.indexOf('\n', pos);
    }
    this.buf = buf.slice(pos);
    return out;
  }

  /** What is left when the stream ends: a last line without its line ending. */
  end(): string {
    const rest = this.buf.replace(/\r$/, '');
    this.buf = '';
    return rest;
  }
}

/** A streamed tool-call delta's index: the calls are kept by index, so it is bounded (max_tool_call_index). */
const isToolCallIndex = (v: unknown, max: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;

const cancelled = () => new ModelError('cancelled', 'the model call was cancelled');
const tooLarge = (max: number) =>
  new ModelError('llm_api_error', `the model response exceeded ${max} bytes`);
const invalid = (msg: string) => new ModelError('invalid_llm_response', msg);
const strOrNull = (v: unknown): string | null => (typeof v === 'string' ? v : null);

function textOf(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) =>
        !isObj(p)
          ? ''
          : typeof p.text === 'string'
            ? p.text
            : p.type === 'refusal' && typeof p.refusal === 'string'
              ? p.refusal
              : '',
      )
      .join('');
  }
  return null;
}

export const isRedirect = (status: number) => status >= 300 && status < 400;

/** How endpoints word "the prompt is longer than the context window" (Letta's list, `error_utils.py`, and a few more). */
const CONTEXT_OVERFLOW =
  /context[_ ]length[_ ]exceeded|maximum context length|exceeds? the (?:model's )?context window|context window (?:is |was |has been )?exceeded|input tokens exceed the configured limit|exceeds the maximum allowed input length|exceeds the available context size/i;

/**
 * Whether an error answer says the prompt did not fit the model's context window: OpenAI's
 * `error.code: "context_length_exceeded"`, or the wording of the others (as Letta detects it) in its
 * first `maxChars`.
 */
export function isContextOverflow(body: string, maxChars: number): boolean {
  try {
    const j: unknown = JSON.parse(body);
    if (isObj(j) && isObj(j.error) && j.error.code === 'context_length_exceeded') return true;
  } catch {
    // not JSON: the wording decides
  }
  return CONTEXT_OVERFLOW.test(body.slice(0, maxChars));
}

/**
 * The key must never leave through an error message, even when a provider echoes it (also escaped or
 * as base64): everything a provider says is read through this before it is cut or put in an error.
 */
export function keyRedactor(apiKey: string | null): Redact {
  return redactor(apiKey ? [{ label: 'api_key', value: apiKey }] : []);
}

/** What a 3xx answer says (redirects are never followed): its status and Location, cut to 300 characters. */
export function redirectMessage(
  what: 'model' | 'embedding',
  res: Response,
  redact: Redact,
): string {
  const location = res.headers.get('location');
  const shown = location === null ? null : redact(location).slice(0, 300);
  return (
    `the ${what} endpoint answered ${res.status} ${shown ? `redirecting to ${shown}` : 'without a Location'}: ` +
    "redirects are not followed (the prompt would go elsewhere); set the provider's base_url to the final URL"
  );
}

/**
 * The message a provider put in its error body (`{error:{message}}`, `{message}`, `{detail}`), else the
 * text cut to 500 characters; redacted as decoded from JSON and before the cut.
 */
export function providerMessage(text: string, redact: Redact): string {
  try {
    const j: unknown = JSON.parse(text);
    if (isObj(j)) {
      if (isObj(j.error) && typeof j.error.message === 'string') return redact(j.error.message);
      if (typeof j.error === 'string') return redact(j.error);
      if (typeof j.message === 'string') return redact(j.message);
      if (typeof j.detail === 'string') return redact(j.detail);
    }
  } catch {
    // not JSON: use the text itself
  }
  return redact(text.trim()).slice(0, 500);
}

/** An error with its network code (ECONNREFUSED …) when it has one. */
export function describe(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const cause = (e as { cause?: unknown }).cause;
  const code = isObj(cause) && typeof cause.code === 'string' ? cause.code : undefined;
  return code ? `${e.message} (${code})` : e.message;
}

/**
 * The endpoint's usage as whole, non-negative counts the run can add up (the API's usage is integers).
 * A count that is missing, not a number, or negative is estimated (chars / 4) rather than trusted: a
 * negative or zeroed count would otherwise shrink the batch's token budget, and a negative one reached
 * a Prometheus counter (which throws). A fraction is rounded; a count above `maxTokens` is cut to
 * it; the total is at least the sum of its parts. The cached and reasoning counts are kept only as
 * reported (nothing to estimate them from), by the same bounds.
 */
export function normaliseUsage(
  raw: unknown,
  messages: ChatMessage[],
  content: string | null,
  calls: ModelToolCall[],
  maxTokens: number,
): ModelUsage {
  const num = (v: unknown) =>
    typeof v === 'number' && Number.isFinite(v) && v >= 0
      ? Math.min(maxTokens, Math.round(v))
      : undefined;
  const u = isObj(raw) ? raw : {};
  const prompt = num(u.prompt_tokens) ?? countTokens(messages);
  const completion =
    num(u.completion_tokens) ??
    Math.ceil(
      ((content ?? '').length +
        calls.reduce((n, c) => n + c.name.length + c.argumentsText.length, 0)) /
        4,
    );
  const cached = isObj(u.prompt_tokens_details)
    ? num(u.prompt_tokens_details.cached_tokens)
    : undefined;
  const reasoning = isObj(u.completion_tokens_details)
    ? num(u.completion_tokens_details.reasoning_tokens)
    : undefined;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: Math.max(num(u.total_tokens) ?? 0, prompt + completion),
    ...(cached === undefined ? {} : { cached_input_tokens: cached }),
    ...(reasoning === undefined ? {} : { reasoning_tokens: reasoning }),
  };
}
