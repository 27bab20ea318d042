/* eslint-disable @typescript-eslint/no-explicit-any */
import { rmSync } from 'node:fs';
import { startApp, TestApp } from '../support/app-harness';
import {
  FAKE_EMBEDDING_DIM,
  FakeModelServer,
  startFakeModelServer,
} from '../support/fake-model-server';
import { api, say } from '../support/processing-fixtures';

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
      overrides: {
        models: {
          openai: { base_url: fake.baseUrl },
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
            // small, so the bound shows: the suite's other archives hold at most 3 passages
            max_scan_passages: 3,
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

  const agentWith = async (over: Record<string, unknown> = {}) => {
    const r = await api(t, 'POST', '/v1/agents', {
      name: `vec-${Math.random().toString(36).slice(2, 8)}`,
      llm_config: {
        model: 'fake',
        model_endpoint_type: 'openai',
        model_endpoint: fake.baseUrl,
        context_window: 8000,
      },
      ...over,
    });
    expect([r.status, r.body.message]).toEqual([200, undefined]);
    return r.body;
  };
  const insert = (agentId: string, text: string, tags?: string[]) =>
    api(t, 'POST', `/v1/agents/${agentId}/archival-memory`, { text, ...(tags ? { tags } : {}) });
  const NOTES = [
    'My dog loves long walks in the park',
    'We had pizza for dinner on Friday',
    'The forecast says rain all week',
  ];

  it('agents and archives keep the embedding model they were made with, or the default', async () => {
    const plain = await agentWith();
    expect(plain.embedding).toBe('fake/fake-embed');
    expect(plain.embedding_config).toMatchObject({
      handle: 'fake/fake-embed',
      embedding_endpoint_type: 'openai',
      embedding_model: 'fake-embed',
      embedding_dim: FAKE_EMBEDDING_DIM,
    });
    const local = await agentWith({ embedding: 'local/bow-64' });
    expect(local.embedding_config).toMatchObject({ handle: 'local/bow-64', embedding_dim: 64 });
    expect((await api(t, 'GET', `/v1/agents/${local.id}`)).body.embedding).toBe('local/bow-64');

    const bad = await api(t, 'POST', '/v1/agents', { embedding: 'openai/text-embedding-3-small' });
    expect(bad.status).toBe(400);
    expect(bad.body.details.problems[0]).toMatchObject({ path: 'embedding' });

    const archive = await api(t, 'POST', '/v1/archives', {
      name: 'by config',
      embedding_config: { embedding_model: 'bow-64', embedding_dim: 64 },
    });
    expect(archive.body.embedding_config).toMatchObject({ handle: 'local/bow-64' });
    const refused = await api(t, 'POST', '/v1/archives', { name: 'x', embedding: 'nope/nope' });
    expect(refused.status).toBe(400);

    // the archive made at the agent's first insert takes the agent's model
    const [p] = (await insert(local.id, 'a first note')).body;
    expect(p.embedding).toHaveLength(64);
    expect(p.embedding_config).toMatchObject({ handle: 'local/bow-64' });
    const archives = await api(t, 'GET', `/v1/archives?agent_id=${local.id}`);
    expect(archives.body[0].embedding_config).toMatchObject({ handle: 'local/bow-64' });
  });

  it('a passage is embedded on insert; vector search finds the closer meaning, full text cannot', async () => {
    const agent = (await agentWith()).id;
    for (const text of NOTES) {
      const r = await insert(agent, text);
      expect(r.status).toBe(200);
      expect(r.body[0].embedding).toHaveLength(FAKE_EMBEDDING_DIM);
    }
    expect(fake.embeddingRequests.map((b) => b.input)).toEqual(NOTES.map((n) => [n]));
    expect(fake.embeddingRequests[0].model).toBe('fake-embed');
    const listed = await api(t, 'GET', `/v1/agents/${agent}/archival-memory`);
    expect(listed.body.map((p: any) => p.embedding.length)).toEqual([16, 16, 16]);

    const found = await api(t, 'GET', `/v1/agents/${agent}/archival-memory/search?query=kitten`);
    expect(found.status).toBe(200);
    expect(found.body.results[0].content).toBe(NOTES[0]);
    expect(found.body.count).toBe(3);
    const viaPassages = await api(t, 'POST', '/v1/passages/search', {
      agent_id: agent,
      query: 'what did we eat',
      limit: 2,
    });
    expect(viaPassages.body[0].passage.text).toBe(NOTES[1]);
    expect(viaPassages.body[0].score).toBeGreaterThan(viaPassages.body[1].score);
    expect(viaPassages.body[0].score).toBeLessThanOrEqual(1);

    const fts = await api(
      t,
      'GET',
      `/v1/agents/${agent}/archival-memory/search?query=kitten&search_mode=fts`,
    );
    expect(fts.body.results).toEqual([]);
  });

  it('hybrid fuses full text and vector ranks (reciprocal rank fusion)', async () => {
    const agent = (await agentWith()).id;
    for (const text of NOTES) await insert(agent, text);
    const r = await api(t, 'POST', '/v1/passages/search', {
      agent_id: agent,
      query: 'pizza kitten',
      search_mode: 'hybrid',
    });
    expect(r.status).toBe(200);
    // pizza: first by words and close by meaning; the dog note: close by meaning only
    expect(r.body.map((x: any) => x.passage.text).slice(0, 2)).toEqual([NOTES[1], NOTES[0]]);
    expect(r.body[0].score).toBeCloseTo(1 / 61 + 1 / 61, 6);
  });

  it('the archival_memory_search tool searches by meaning', async () => {
    const agent = (await agentWith({ tools: ['archival_memory_search'] })).id;
    for (const text of NOTES) await insert(agent, text);
    fake.push(
      {
        tool_calls: [{ name: 'archival_memory_search', arguments: { query: 'umbrella weather' } }],
      },
      { content: 'done' },
    );
    const res = await api(t, 'POST', `/v1/agents/${agent}/messages`, say('what about the weather'));
    const ret = res.body.messages.find((m: any) => m.message_type === 'tool_return_message');
    expect(ret.status).toBe('success');
    expect(JSON.parse(JSON.parse(ret.tool_return).message)[0].content).toBe(NOTES[2]);
  });

  it('the offline hashed model ranks by shared words', async () => {
    const archive = (
      await api(t, 'POST', '/v1/archives', { name: 'bow', embedding: 'local/bow-64' })
    ).body;
    await api(t, 'POST', `/v1/archives/${archive.id}/passages/batch`, {
      passages: [{ text: 'blue whales sing' }, { text: 'red apples fall' }],
    });
    const r = await api(t, 'POST', '/v1/passages/search', {
      archive_id: archive.id,
      query: 'apples',
      search_mode: 'vector',
    });
    expect(r.body[0].passage.text).toBe('red apples fall');
    expect(fake.embeddingRequests).toEqual([]); // offline
  });

  it('a provider that is down is a clear 503, an error answer a 502; nothing is written', async () => {
    const agent = (await agentWith()).id;
    fake.failEmbeddings(503);
    const down = await insert(agent, 'never stored');
    expect(down.status).toBe(503);
    expect(down.body.code).toBe('EMBEDDING_PROVIDER_UNAVAILABLE');
    expect(down.body.message).toContain('503');
    expect(JSON.stringify(down.body)).not.toContain('sk-embed-secret');
    // not even the archive the first insert would have made
    expect((await api(t, 'GET', `/v1/archives?agent_id=${agent}`)).body).toEqual([]);

    fake.failEmbeddings(400);
    const bad = await insert(agent, 'never stored either');
    expect(bad.status).toBe(502);
    expect(bad.body.code).toBe('EMBEDDING_PROVIDER_ERROR');

    fake.failEmbeddings(null);
    expect((await insert(agent, 'stored at last')).status).toBe(200);
    fake.failEmbeddings(503);
    const search = await api(t, 'GET', `/v1/agents/${agent}/archival-memory/search?query=x`);
    expect(search.status).toBe(503);
    const listed = await api(t, 'GET', `/v1/agents/${agent}/archival-memory`);
    expect(listed.body.map((p: any) => p.text)).toEqual(['stored at last']);
  });

  it('the tools read a provider failure as their error return, never a failed run', async () => {
    const agent = (await agentWith({ tools: ['archival_memory_insert', 'archival_memory_search'] }))
      .id;
    await insert(agent, 'an earlier note');
    fake.failEmbeddings(503);
    fake.push(
      { tool_calls: [{ name: 'archival_memory_insert', arguments: { content: 'a note' } }] },
      { tool_calls: [{ name: 'archival_memory_search', arguments: { query: 'note' } }] },
      { content: 'sorry' },
    );
    const res = await api(t, 'POST', `/v1/agents/${agent}/messages`, say('remember'));
    expect(res.status).toBe(200);
    const returns = res.body.messages.filter((m: any) => m.message_type === 'tool_return_message');
    expect(returns.map((m: any) => m.status)).toEqual(['error', 'error']);
    expect(returns[0].tool_return).toContain('the embedding endpoint answered 503');
    const kept = (await api(t, 'GET', `/v1/agents/${agent}/archival-memory`)).body;
    expect(kept.map((p: any) => p.text)).toEqual(['an earlier note']);
  });

  it('an agent file carries the embedding model; an import keeps it when it is configured here', async () => {
    const agent = await agentWith({ embedding: 'local/bow-64' });
    const af = (await api(t, 'GET', `/v1/agents/${agent.id}/export`)).body;
    expect(af.agents[0].embedding_config).toMatchObject({ handle: 'local/bow-64' });
    const importAs = async (embeddingConfig: unknown) => {
      const form = new FormData();
      const file = { ...af, agents: [{ ...af.agents[0], embedding_config: embeddingConfig }] };
      form.append('file', new Blob([JSON.stringify(file)], { type: 'application/json' }), 'a.af');
      const res = await fetch(`${t.baseUrl}/v1/agents/import`, { method: 'POST', body: form });
      const id = ((await res.json()) as any).agent_ids[0];
      return (await api(t, 'GET', `/v1/agents/${id}`)).body.embedding;
    };
    expect(await importAs(af.agents[0].embedding_config)).toBe('local/bow-64');
    // Letta's own model, not configured here: the default, not a refusal
    expect(await importAs({ handle: 'openai/text-embedding-3-small', embedding_dim: 2000 })).toBe(
      'fake/fake-embed',
    );
  });

  it('vector search compares the newest max_scan_passages; hybrid still finds older ones by words', async () => {
    const archive = (await api(t, 'POST', '/v1/archives', { name: 'bounded' })).body;
    await api(t, 'POST', `/v1/archives/${archive.id}/passages/batch`, {
      passages: [
        { text: 'my dog sleeps all day', created_at: '2020-01-01T00:00:00Z' },
        ...NOTES.slice(1).map((text) => ({ text })),
        { text: 'a flight to Lisbon' },
      ],
    });
    const search = (mode: string) =>
      api(t, 'POST', '/v1/passages/search', {
        archive_id: archive.id,
        query: 'dog',
        search_mode: mode,
      });
    const vector = (await search('vector')).body.map((x: any) => x.passage.text);
    expect(vector).toHaveLength(3);
    expect(vector).not.toContain('my dog sleeps all day');
    expect((await search('hybrid')).body[0].passage.text).toBe('my dog sleeps all day');
  });

  it('deleting a passage and an archive deletes their vectors', async () => {
    const archive = (await api(t, 'POST', '/v1/archives', { name: 'gone' })).body;
    const p = (await api(t, 'POST', `/v1/archives/${archive.id}/passages`, { text: 'a dog' })).body;
    await api(t, 'POST', `/v1/archives/${archive.id}/passages`, { text: 'a cat' });
    expect((await api(t, 'DELETE', `/v1/archives/${archive.id}/passages/${p.id}`)).status).toBe(
      204,
    );
    const r = await api(t, 'POST', '/v1/passages/search', {
      archive_id: archive.id,
      query: 'puppy',
    });
    expect(r.body.map((x: any) => x.passage.text)).toEqual(['a cat']);
    expect((await api(t, 'DELETE', `/v1/archives/${archive.id}`)).status).toBe(204);
  });
});

describe('an embedding model added to a running deployment', () => {
  it('old archives keep full text; a search without a mode fuses them with the new vectors', async () => {
    const fake = await startFakeModelServer();
    const before = await startApp({ modelBaseUrl: fake.baseUrl, keepDir: true });
    const old = (await api(before, 'POST', '/v1/archives', { name: 'old' })).body;
    expect(old.embedding_config).toBeNull();
    await api(before, 'POST', `/v1/archives/${old.id}/passages`, { text: 'my dog sleeps all day' });
    await before.close();

    const t = await startApp({
      dir: before.dir,
      modelBaseUrl: fake.baseUrl,
      overrides: {
        models: {
          embeddings: {
            providers: [
              {
                name: 'fake',
                base_url: fake.baseUrl,
                models: [{ name: 'fake-embed', dimensions: FAKE_EMBEDDING_DIM }],
              },
            ],
            default_model: 'fake/fake-embed',
          },
        },
      },
    });
    try {
      const fresh = (await api(t, 'POST', '/v1/archives', { name: 'new' })).body;
      await api(t, 'POST', `/v1/archives/${fresh.id}/passages`, { text: 'a kitten plays' });
      const added = await api(t, 'POST', `/v1/archives/${old.id}/passages`, { text: 'dog days' });
      expect(added.body).toMatchObject({ embedding: null, embedding_config: null });

      const all = await api(t, 'POST', '/v1/passages/search', { query: 'dog' });
      expect(all.body.map((x: any) => x.passage.text).sort()).toEqual([
        'a kitten plays',
        'dog days',
        'my dog sleeps all day',
      ]);
      const refused = await api(t, 'POST', '/v1/passages/search', {
        query: 'dog',
        archive_id: old.id,
        search_mode: 'vector',
      });
      expect(refused).toMatchObject({ status: 400, body: { code: 'VECTOR_SEARCH_UNAVAILABLE' } });
      expect(refused.body.message).toContain('the searched archives have none');
    } finally {
      await t.close();
      rmSync(before.dir, { recursive: true, force: true });
      await fake.close();
    }
  });
});
