import { EmbeddingError } from '../../../src/models/embeddings/embedding-provider';
import {
  OpenAiEmbeddings,
  OpenAiEmbeddingsOptions,
} from '../../../src/models/embeddings/openai-embeddings.provider';
import {
  FAKE_EMBEDDING_DIM,
  FakeModelServer,
  fakeEmbedding,
  startFakeModelServer,
} from '../../support/fake-model-server';
import { MODEL_ANSWER_BOUNDS } from '../../support/input-limits';

const KEY = 'sk-embedding-key-98765';

describe('OpenAiEmbeddings against the fake model server', () => {
  let fake: FakeModelServer;
  let sleeps: number[];

  beforeAll(async () => {
    fake = await startFakeModelServer();
  });
  beforeEach(() => {
    fake.reset();
    sleeps = [];
  });
  afterAll(() => fake.close());

  const provider = (o: Partial<OpenAiEmbeddingsOptions> = {}) =>
    new OpenAiEmbeddings({
      baseUrl: fake.baseUrl,
      apiKey: KEY,
      model: 'fake-embed',
      dimensions: FAKE_EMBEDDING_DIM,
      batchSize: 2,
      timeoutMs: 5000,
      maxRetries: 1,
      maxResponseBytes: 1_000_000,
      maxErrorBodyBytes: MODEL_ANSWER_BOUNDS.max_error_body_bytes,
      sleep: (ms) => {
        sleeps.push(ms);
        return Promise.resolve();
      },
      ...o,
    });

  it('embeds in batches of batch_size, in order, with the key and the model', async () => {
    const texts = ['a cat', 'pizza night', 'rain again'];
    expect(await provider().embed(texts)).toEqual(texts.map(fakeEmbedding));
    expect(fake.embeddingRequests.map((r) => r.input)).toEqual([
      ['a cat', 'pizza night'],
      ['rain again'],
    ]);
    expect(fake.embeddingRequests[0].model).toBe('fake-embed');
  });

  it('a redirect is not followed: a bad answer naming the Location, the texts sent nowhere else', async () => {
    const other = await startFakeModelServer();
    try {
      fake.failEmbeddings(307, { location: `${other.baseUrl}/embeddings` });
      const e = await provider()
        .embed(['a secret text'])
        .catch((err: unknown) => err);
      expect(e).toBeInstanceOf(EmbeddingError);
      expect(e).toMatchObject({
        kind: 'bad_answer',
        message: expect.stringContaining(`answered 307 redirecting to ${other.baseUrl}/embeddings`),
      });
      expect(other.embeddingRequests).toHaveLength(0);
      expect(fake.embeddingRequests).toHaveLength(1);
    } finally {
      await other.close();
    }
  });

  it('a vector of other dimensions than configured is a bad answer', async () => {
    await expect(provider({ dimensions: 3 }).embed(['x'])).rejects.toMatchObject({
      kind: 'bad_answer',
      message: expect.stringContaining(
        `has ${FAKE_EMBEDDING_DIM} dimensions; the configuration says 3`,
      ),
    });
  });

  it('5xx is retried, then unreachable; the key never shows', async () => {
    fake.failEmbeddings(503);
    const err = await provider()
      .embed(['x'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbeddingError);
    expect(err).toMatchObject({ kind: 'unreachable', message: expect.stringContaining('503') });
    expect((err as Error).message).not.toContain(KEY);
    expect(fake.embeddingRequests).toHaveLength(2);
    expect(sleeps).toEqual([250]);
  });

  it('a 4xx is a bad answer, not retried', async () => {
    fake.failEmbeddings(400);
    await expect(provider().embed(['x'])).rejects.toMatchObject({ kind: 'bad_answer' });
    expect(fake.embeddingRequests).toHaveLength(1);
  });

  it('a closed port is unreachable', async () => {
    const closed = await startFakeModelServer();
    const url = closed.baseUrl;
    await closed.close();
    await expect(provider({ baseUrl: url, maxRetries: 0 }).embed(['x'])).rejects.toMatchObject({
      kind: 'unreachable',
      message: expect.stringContaining('cannot reach the embedding endpoint'),
    });
  });
});
