import { readBodyCapped } from '../../common/bounded-body';
import {
  describe,
  isRedirect,
  keyRedactor,
  providerMessage,
  redirectMessage,
  type SleepFn,
} from '../openai.provider';
import type { Redact } from '../../core/secrets/redactor';
import { EmbeddingError, type EmbeddingProvider } from './embedding-provider';

export interface OpenAiEmbeddingsOptions {
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`; never part of an error message. */
  apiKey: string | null;
  model: string;
  dimensions: number;
  batchSize: number;
  timeoutMs: number;
  maxRetries: number;
  maxResponseBytes: number;
  /** An error answer is read this far for its message (`models.max_error_body_bytes`). */
  maxErrorBodyBytes: number;
  sleep: SleepFn;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** OpenAI-compatible `POST {base_url}/embeddings`, in batches, with a timeout and retries on 429/5xx. */
export class OpenAiEmbeddings implements EmbeddingProvider {
  private readonly redact: Redact;

  constructor(private readonly opts: OpenAiEmbeddingsOptions) {
    this.redact = keyRedactor(opts.apiKey);
  }

  async embed(texts: string[]): Promise<number[][]> {
    const out: number[][] = [];
    for (let i = 0; i < texts.length; i += this.opts.batchSize)
      out.push(...(await this.batch(texts.slice(i, i + this.opts.batchSize))));
    return out;
  }

  private async batch(input: string[]): Promise<number[][]> {
    let last = '';
    for (let attempt = 0; attempt <= this.opts.maxRetries; attempt++) {
      if (attempt > 0) await this.opts.sleep(Math.min(250 * 2 ** (attempt - 1), 4000));
      const r = await this.attempt(input);
      if ('vectors' in r) return r.vectors;
      last = r.retry;
    }
    throw new EmbeddingError('unreachable', this.redact(last));
  }

  private async attempt(input: string[]): Promise<{ vectors: number[][] } | { retry: string }> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), this.opts.timeoutMs);
    try {
      let res: Response;
      try {
        res = await fetch(`${this.opts.baseUrl.replace(/\/+$/, '')}/embeddings`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ model: this.opts.model, input }),
          signal: ac.signal,
          // never followed: a redirect would re-send the texts to wherever it points
          redirect: 'manual',
        });
      } catch (e) {
        return {
          retry: ac.signal.aborted
            ? `the embedding endpoint did not answer within ${this.opts.timeoutMs / 1000} s`
            : `cannot reach the embedding endpoint: ${describe(e)}`,
        };
      }
      if (isRedirect(res.status)) {
        void res.body?.cancel().catch(() => undefined);
        throw new EmbeddingError('bad_answer', redirectMessage('embedding', res, this.redact));
      }
      const read = await readBodyCapped(
        res,
        res.ok ? this.opts.maxResponseBytes : this.opts.maxErrorBodyBytes,
      ).catch((e: unknown) => ({ exceeded: false as const, text: '', error: describe(e) }));
      if (!res.ok) {
        const detail =
          (!read.exceeded && providerMessage(read.text, this.redact)) || res.statusText;
        const msg = `the embedding endpoint answered ${res.status}: ${detail}`;
        if (res.status === 429 || res.status >= 500) return { retry: msg };
        throw new EmbeddingError('bad_answer', this.redact(msg));
      }
      if (read.exceeded) throw this.bad(`the answer exceeded ${this.opts.maxResponseBytes} bytes`);
      if ('error' in read) return { retry: `the answer broke off: ${read.error}` };
      return { vectors: this.parse(read.text, input.length) };
    } finally {
      clearTimeout(timer);
    }
  }

  /** `{data: [{index, embedding}]}`, one per input, each of the configured dimensions. */
  private parse(text: string, count: number): number[][] {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw this.bad('the answer is not JSON');
    }
    const data = isObj(json) && Array.isArray(json.data) ? (json.data as unknown[]) : null;
    if (!data || data.length !== count)
      throw this.bad(`expected ${count} embeddings, got ${data ? data.length : 'none'}`);
    const out: number[][] = new Array<number[]>(count);
    data.forEach((d, i) => {
      const index = isObj(d) && typeof d.index === 'number' ? d.index : i;
      const v = isObj(d) ? d.embedding : undefined;
      if (!Array.isArray(v) || !v.every((x) => typeof x === 'number' && Number.isFinite(x)))
        throw this.bad('an embedding is not a list of numbers');
      if (v.length !== this.opts.dimensions)
        throw this.bad(
          `an embedding has ${v.length} dimensions; the configuration says ${this.opts.dimensions}`,
        );
      if (!Number.isInteger(index) || index < 0 || index >= count || out[index])
        throw this.bad('the embeddings do not match the inputs');
      out[index] = v as number[];
    });
    return out;
  }

  private bad(msg: string): EmbeddingError {
    return new EmbeddingError('bad_answer', `embedding endpoint: ${msg}`);
  }
}
