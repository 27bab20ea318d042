import { startApp, TestApp } from '../support/app-harness';
import {
  FAKE_EMBEDDING_DIM,
  FakeModelServer,
  startFakeModelServer,
} from '../support/fake-model-server';
import { api } from '../support/processing-fixtures';

/**
 * Vector search in archival memory: configured embedding models (`models.embeddings`), passages embedded on
 * insert, vector and hybrid search. The fake model server's embeddings put words of one topic close
 * ("kitten" near "dog"), so a vector search finds what full text cannot.
 */
describe('archival memory with an embedding provider', () => {
  let t: TestApp;
  let fake: FakeModelServer;

  beforeAll(async () => {
    fake = await startFakeModelServer();
    t = await startApp({
      modelBaseUrl: fake.baseUrl,
      overrides: {
        models: {
          embeddings: {
            providers: [
              {
                name: 'fake',
                type: 'openai',
                base_url: fake.baseUrl,
                api_key: 'sk-embed-secret',
                models: [{ name: 'fake-embed', dimensions: FAKE_EMBEDDING_DIM }],
                max_retries: 0,
              },
              { name: 'local', type: 'hashed', models: [{ name: 'bow-64', dimensions: 64 }] },
            ],
            default_model: 'fake/fake-embed',
          },
        },
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  it('GET /v1/models/embedding lists the configured models in Letta’s shape, never a key', async () => {
    const r = await api(t, 'GET', '/v1/models/embedding');
    expect(r.status).toBe(200);
    expect(r.body).toEqual([
      expect.objectContaining({
        handle: 'fake/fake-embed',
        name: 'fake-embed',
        model_type: 'embedding',
        provider_name: 'fake',
        provider_type: 'openai',
        embedding_endpoint_type: 'openai',
        embedding_endpoint: fake.baseUrl,
        embedding_model: 'fake-embed',
        embedding_dim: FAKE_EMBEDDING_DIM,
        embedding_chunk_size: 300,
        batch_size: 64,
      }),
      expect.objectContaining({
        handle: 'local/bow-64',
        provider_type: 'letta',
        embedding_endpoint_type: 'hashed',
        embedding_endpoint: null,
        embedding_dim: 64,
      }),
    ]);
    expect(JSON.stringify(r.body)).not.toContain('sk-embed-secret');
  });
});
