import { Inject, Injectable, Optional } from '@nestjs/common';
import { DomainError } from '../../common/domain-error';
import type { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { MODEL_RETRY_SLEEP } from '../models.service';
import { realSleep, type SleepFn } from '../openai.provider';
import { EmbeddingCatalog, type EmbeddingModelInfo } from './embedding-catalog';
import { EmbeddingError, HashedEmbeddings, type EmbeddingProvider } from './embedding-provider';
import { OpenAiEmbeddings } from './openai-embeddings.provider';

/**
 * The operator's embedding models, and the one call that embeds texts. Failures are domain errors:
 * `503 EMBEDDING_PROVIDER_UNAVAILABLE` (unreachable, timed out, 429/5xx after the retries, or a model
 * no longer configured), `502 EMBEDDING_PROVIDER_ERROR` (an error answer or vectors of the wrong shape).
 */
@Injectable()
export class EmbeddingsService extends EmbeddingCatalog {
  private readonly clients = new Map<string, EmbeddingProvider>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Optional() @Inject(MODEL_RETRY_SLEEP) private readonly sleep?: SleepFn,
  ) {
    super(config.models.embeddings);
  }

  /** One vector per text, by the model of `handle`; each text cut to the provider's max_input_chars. */
  async embed(handle: string, texts: string[]): Promise<number[][]> {
    const m = this.get(handle);
    if (!m)
      throw new DomainError(
        'unavailable',
        'EMBEDDING_PROVIDER_UNAVAILABLE',
        `embedding model ${handle} is no longer configured`,
        { handle },
      );
    try {
      return await this.client(m).embed(texts.map((t) => t.slice(0, m.max_input_chars)));
    } catch (e) {
      if (!(e instanceof EmbeddingError)) throw e;
      throw e.kind === 'unreachable'
        ? new DomainError('unavailable', 'EMBEDDING_PROVIDER_UNAVAILABLE', e.message, { handle })
        : new DomainError('bad_gateway', 'EMBEDDING_PROVIDER_ERROR', e.message, { handle });
    }
  }

  private client(m: EmbeddingModelInfo): EmbeddingProvider {
    let c = this.clients.get(m.handle);
    if (!c) {
      const p = this.config.models.embeddings.providers.find((x) => x.name === m.provider_name)!;
      c =
        m.type === 'hashed'
          ? new HashedEmbeddings(m.dimensions)
          : new OpenAiEmbeddings({
              baseUrl: m.base_url!,
              apiKey: p.api_key,
              model: m.model,
              dimensions: m.dimensions,
              batchSize: m.batch_size,
              timeoutMs: p.timeout_seconds * 1000,
              maxRetries: p.max_retries,
              maxResponseBytes: this.config.models.max_response_bytes,
              maxErrorBodyBytes: this.config.models.max_error_body_bytes,
              sleep: this.sleep ?? realSleep,
            });
      this.clients.set(m.handle, c);
    }
    return c;
  }
}
