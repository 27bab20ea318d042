import { hashedEmbedding } from '../../core/memory/vectors';

/** Turns texts into vectors, one per text, in order. */
export interface EmbeddingProvider {
  embed(texts: string[]): Promise<number[][]>;
}

/**
 * An embedding call that failed: `unreachable` (connection, timeout, 429/5xx after the retries) or
 * `bad_answer` (an error answer, or vectors of the wrong shape). The message never holds the key.
 */
export class EmbeddingError extends Error {
  constructor(
    readonly kind: 'unreachable' | 'bad_answer',
    message: string,
  ) {
    super(message);
    this.name = 'EmbeddingError';
  }
}

/** The offline provider: hashed bag of words (core/memory/vectors), NOT semantic. */
export class HashedEmbeddings implements EmbeddingProvider {
  constructor(private readonly dimensions: number) {}

  embed(texts: string[]): Promise<number[][]> {
    return Promise.resolve(texts.map((t) => hashedEmbedding(t, this.dimensions)));
  }
}
