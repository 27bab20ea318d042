import { DomainError } from '../../../src/common/domain-error';
import { loadConfig } from '../../../src/config/app-config';
import { EmbeddingsService } from '../../../src/models/embeddings/embeddings.service';
import {
  FAKE_EMBEDDING_DIM,
  FakeModelServer,
  fakeEmbedding,
  startFakeModelServer,
} from '../../support/fake-model-server';

describe('EmbeddingsService', () => {
  let fake: FakeModelServer;
  let service: EmbeddingsService;

  beforeAll(async () => {
    fake = await startFakeModelServer();
    const config = loadConfig(
      {},
      {
        models: {
          embeddings: {
            providers: [
              {
                name: 'fake',
                base_url: fake.baseUrl,
                models: [{ name: 'e', dimensions: FAKE_EMBEDDING_DIM }],
                max_retries: 0,
                max_input_chars: 9,
              },
            ],
          },
        },
      },
    );
    service = new EmbeddingsService(config, () => Promise.resolve());
  });
  beforeEach(() => fake.reset());
  afterAll(() => fake.close());

  it('embeds each text cut to max_input_chars', async () => {
    expect(await service.embed('fake/e', ['my dog barks loudly'])).toEqual([
      fakeEmbedding('my dog ba'),
    ]);
    expect(fake.embeddingRequests[0].input).toEqual(['my dog ba']);
  });

  it.each<[string, () => Promise<unknown>, string, string]>([
    [
      'a model no longer configured',
      () => service.embed('gone/model', ['x']),
      'unavailable',
      'EMBEDDING_PROVIDER_UNAVAILABLE',
    ],
    [
      'a 5xx after the retries',
      () => (fake.failEmbeddings(503), service.embed('fake/e', ['x'])),
      'unavailable',
      'EMBEDDING_PROVIDER_UNAVAILABLE',
    ],
    [
      'an error answer',
      () => (fake.failEmbeddings(400), service.embed('fake/e', ['x'])),
      'bad_gateway',
      'EMBEDDING_PROVIDER_ERROR',
    ],
  ])('%s is a domain error', async (_what, call, kind, code) => {
    const err = await call().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ kind, code });
  });
});
