/* eslint-disable @typescript-eslint/no-explicit-any */
import Letta from '@letta-ai/letta-client';
import { startApp, TestApp } from '../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../support/fake-model-server';
import { api, say, TENANT_A, TENANT_B, TWO_TENANTS } from '../support/processing-fixtures';

/** Archival memory: agent passages, archives, ranked full-text search, the archival tools, tenants. */
describe('archival memory (archival-memory, /v1/archives, /v1/passages/search)', () => {
  let t: TestApp;
  let fake: FakeModelServer;
  let a: Letta;
  let b: Letta;
  const A = TENANT_A;
  const B = TENANT_B;

  beforeAll(async () => {
    fake = await startFakeModelServer();
    t = await startApp({
      modelBaseUrl: fake.baseUrl,
      overrides: {
        ...TWO_TENANTS,
        limits: {
          max_passage_chars: 1000,
          max_tags_per_passage: 3,
          max_passages_per_request: 2,
          max_search_results: 20,
        },
      },
    });
    a = new Letta({ baseURL: t.baseUrl, apiKey: 'key-a', maxRetries: 0 });
    b = new Letta({ baseURL: t.baseUrl, apiKey: 'key-b', maxRetries: 0 });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  const newAgent = async (name: string, client = a, tools: string[] = [], extra = {}) =>
    (
      await client.agents.create({
        name,
        tools,
        ...extra,
        llm_config: {
          model: 'fake',
          model_endpoint_type: 'openai',
          model_endpoint: fake.baseUrl,
          context_window: 8000,
        },
      } as any)
    ).id;

  it('inserts, lists (order, cursors, search) and deletes an agent’s passages', async () => {
    const agent = await newAgent('lister');
    const texts = ['first note about apples', 'second note about pears', 'third note about apples'];
    const ids: string[] = [];
    for (const text of texts) {
      const [p] = await a.agents.passages.create(agent, { text, tags: ['fruit'] });
      expect(p).toMatchObject({ text, tags: ['fruit'], embedding: null });
      expect(p.id).toMatch(/^passage-/);
      ids.push(p.id!);
    }
    expect((await a.agents.passages.list(agent)).map((p) => p.id)).toEqual(ids); // oldest first
    expect((await a.agents.passages.list(agent, { ascending: false })).map((p) => p.id)).toEqual(
      [...ids].reverse(),
    );
    expect(
      (await a.agents.passages.list(agent, { limit: 2, after: ids[0] })).map((p) => p.id),
    ).toEqual(ids.slice(1));
    expect((await a.agents.passages.list(agent, { before: ids[2] })).map((p) => p.id)).toEqual(
      ids.slice(0, 2),
    );
    expect((await a.agents.passages.list(agent, { search: 'APPLES' })).map((p) => p.id)).toEqual([
      ids[0],
      ids[2],
    ]);
    await a.agents.passages.delete(ids[1], { agent_id: agent });
    expect((await a.agents.passages.list(agent)).map((p) => p.id)).toEqual([ids[0], ids[2]]);
    const again = await api(
      t,
      'DELETE',
      `/v1/agents/${agent}/archival-memory/${ids[1]}`,
      undefined,
      A,
    );
    expect(again).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
  });

  it('search is full text and ranked: more matching words first, stems match, tags and dates filter', async () => {
    const agent = await newAgent('searcher');
    const put = async (text: string, tags: string[] = []) =>
      (await a.agents.passages.create(agent, { text, tags }))[0].id!;
    const both = await put('The cat sat on the mat', ['pets', 'home']);
    const one = await put('Cats chase mice at night', ['pets']);
    await put('Dogs are loyal companions', ['pets']);
    const res = await a.agents.passages.search(agent, { query: 'cat mat' });
    expect(res.results.map((r) => r.id)).toEqual([both, one]);
    expect(res.count).toBe(2);
    expect(res.results[0]).toMatchObject({
      content: 'The cat sat on the mat',
      tags: ['pets', 'home'],
    });

    const all = await a.agents.passages.search(agent, {
      query: 'cat',
      tags: ['pets', 'home'],
      tag_match_mode: 'all',
    });
    expect(all.results.map((r) => r.id)).toEqual([both]);
    const any = await a.agents.passages.search(agent, { query: 'cat', tags: ['home', 'x'] });
    expect(any.results.map((r) => r.id)).toEqual([both]);
    const top = await a.agents.passages.search(agent, { query: 'cat', top_k: 1 });
    expect(top.results).toHaveLength(1);
    const future = await a.agents.passages.search(agent, {
      query: 'cat',
      start_datetime: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(future.results).toEqual([]);
    // the query's punctuation never reaches the index as syntax
    const odd = await a.agents.passages.search(agent, { query: '"cat* OR (mat' });
    expect(odd.results.map((r) => r.id)).toEqual([both, one]);

    // passages.search across the tenant: ranked with scores
    const ranked = await a.passages.search({ query: 'cat mat', agent_id: agent });
    expect(ranked.map((r) => r.passage.id)).toEqual([both, one]);
    expect(ranked[0].score).toBeGreaterThan(ranked[1].score);
  });

  it.each([
    ['a text past limits.max_passage_chars', { text: 'x'.repeat(1001) }, 'VALIDATION_FAILED'],
    ['no text', { tags: [] }, 'VALIDATION_FAILED'],
    [
      'tags past limits.max_tags_per_passage',
      { text: 'x', tags: ['a', 'b', 'c', 'd'] },
      'LIMIT_EXCEEDED',
    ],
    ['a bad created_at', { text: 'x', created_at: 'yesterday' }, 'VALIDATION_FAILED'],
    ['a NUL character', { text: 'a\u0000b' }, 'VALIDATION_FAILED'],
  ])('refuses %s with a 400', async (_what, body, code) => {
    const agent = await newAgent('bounds');
    const res = await api(t, 'POST', `/v1/agents/${agent}/archival-memory`, body, A);
    expect(res).toMatchObject({ status: 400, body: { code } });
  });

  it('bounds a search: limit / top_k past limits.max_search_results, too many tags, a bad mode', async () => {
    const agent = await newAgent('search-bounds');
    for (const q of [
      'query=x&top_k=21',
      'query=x&tags=a&tags=b&tags=c&tags=d',
      'query=x&tag_match_mode=some',
      'query=x&search_mode=semantic',
    ]) {
      const res = await api(
        t,
        'GET',
        `/v1/agents/${agent}/archival-memory/search?${q}`,
        undefined,
        A,
      );
      expect(res.status).toBe(400);
    }
    const list = await api(t, 'GET', `/v1/agents/${agent}/archival-memory?limit=21`, undefined, A);
    expect(list).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
    const search = await api(t, 'POST', '/v1/passages/search', { query: 'x', limit: 21 }, A);
    expect(search).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
  });

  it('no embedding model configured: vector and hybrid modes say so (400), embeddings a client names are ignored', async () => {
    const agent = await newAgent('no-vectors', a, [], {
      embedding: 'openai/text-embedding-3-small',
    });
    expect(await a.agents.retrieve(agent)).toMatchObject({ embedding_config: null });
    await a.agents.passages.create(agent, { text: 'the cat sat' });
    for (const mode of ['vector', 'hybrid']) {
      const res = await api(
        t,
        'POST',
        '/v1/passages/search',
        { query: 'cat', search_mode: mode },
        A,
      );
      expect(res).toMatchObject({ status: 400, body: { code: 'VECTOR_SEARCH_UNAVAILABLE' } });
      expect(res.body.message).toContain('models.embeddings');
    }
    const fts = await api(
      t,
      'GET',
      `/v1/agents/${agent}/archival-memory/search?query=cat&search_mode=fts`,
      undefined,
      A,
    );
    expect(fts.body.results).toHaveLength(1);
    expect(fake.embeddingRequests).toEqual([]);
  });

  it('archives: create, list, retrieve, update, passages, attach to two agents (shared), one per agent, delete', async () => {
    const archive = await a.archives.create({ name: 'kb', description: 'knowledge' });
    expect(archive).toMatchObject({
      name: 'kb',
      description: 'knowledge',
      vector_db_provider: 'native',
    });
    expect((await a.archives.retrieve(archive.id)).name).toBe('kb');
    expect((await a.archives.update(archive.id, { description: 'facts' })).description).toBe(
      'facts',
    );
    // as Letta's update (it sets only the fields given not null), null keeps them
    expect(await a.archives.update(archive.id, { name: null, description: null })).toMatchObject({
      name: 'kb',
      description: 'facts',
    });
    expect((await a.archives.list({ name: 'kb' })).getPaginatedItems().map((x) => x.id)).toEqual([
      archive.id,
    ]);
    const p = await a.archives.passages.create(archive.id, {
      text: 'Paris is the capital of France',
    });
    const many = await a.archives.passages.createMany(archive.id, {
      passages: [{ text: 'Berlin is the capital of Germany' }, { text: 'Rome is in Italy' }],
    });
    expect(many).toHaveLength(2);
    const tooMany = await api(
      t,
      'POST',
      `/v1/archives/${archive.id}/passages/batch`,
      { passages: [{ text: '1' }, { text: '2' }, { text: '3' }] },
      A,
    );
    expect(tooMany).toMatchObject({ status: 400, body: { code: 'LIMIT_EXCEEDED' } });

    const x = await newAgent('reader-x');
    const y = await newAgent('reader-y');
    await a.agents.archives.attach(archive.id, { agent_id: x });
    await a.agents.archives.attach(archive.id, { agent_id: y });
    expect((await a.archives.list({ agent_id: x })).getPaginatedItems().map((r) => r.id)).toEqual([
      archive.id,
    ]);
    // an insert through x is found through y
    await a.agents.passages.create(x, { text: 'Madrid is the capital of Spain' });
    const found = await a.agents.passages.search(y, { query: 'capital Spain' });
    expect(found.results[0].content).toBe('Madrid is the capital of Spain');
    expect((await a.passages.search({ query: 'capital', archive_id: archive.id })).length).toBe(3);

    const other = await a.archives.create({ name: 'other' });
    const second = await api(
      t,
      'PATCH',
      `/v1/agents/${x}/archives/attach/${other.id}`,
      undefined,
      A,
    );
    expect(second).toMatchObject({ status: 409, body: { code: 'AGENT_HAS_ARCHIVE' } });
    await a.agents.archives.detach(archive.id, { agent_id: x });
    expect((await a.agents.passages.search(x, { query: 'capital' })).results).toEqual([]);
    await a.agents.archives.attach(other.id, { agent_id: x });

    await a.archives.passages.delete(p.id!, { archive_id: archive.id });
    expect((await a.passages.search({ query: 'Paris', archive_id: archive.id })).length).toBe(0);
    await a.archives.delete(archive.id);
    await expect(a.archives.retrieve(archive.id)).rejects.toMatchObject({ status: 404 });
    expect((await a.agents.passages.search(y, { query: 'capital' })).results).toEqual([]);
  });

  it('an agent uses archival_memory_insert and archival_memory_search through the ToolExecutor', async () => {
    const agent = await newAgent('tooluser', a, [
      'archival_memory_insert',
      'archival_memory_search',
    ]);
    fake.push(
      {
        tool_calls: [
          {
            name: 'archival_memory_insert',
            arguments: {
              content: 'The launch code word is heliotrope',
              tags: ['secrets'],
              request_heartbeat: true,
            },
          },
        ],
      },
      {
        tool_calls: [
          {
            name: 'archival_memory_search',
            arguments: { query: 'launch word', request_heartbeat: true },
          },
        ],
      },
      { content: 'found it' },
    );
    const res = await api(t, 'POST', `/v1/agents/${agent}/messages`, say('remember and recall'), A);
    expect(res.status).toBe(200);
    const returns = res.body.messages.filter((m: any) => m.message_type === 'tool_return_message');
    expect(returns).toHaveLength(2);
    expect(returns.every((m: any) => m.status === 'success')).toBe(true);
    expect(returns[1].tool_return).toContain('heliotrope');
    const stored = await a.agents.passages.list(agent);
    expect(stored).toEqual([
      expect.objectContaining({ text: 'The launch code word is heliotrope', tags: ['secrets'] }),
    ]);
    // a tool-side bound is the model's error, never a 500
    fake.push(
      {
        tool_calls: [{ name: 'archival_memory_insert', arguments: { content: 'y'.repeat(1001) } }],
      },
      { content: 'ok' },
    );
    const big = await api(t, 'POST', `/v1/agents/${agent}/messages`, say('store this'), A);
    const ret = big.body.messages.find((m: any) => m.message_type === 'tool_return_message');
    expect(ret.status).toBe('error');
    expect(ret.tool_return).toContain('max_passage_chars');
  });

  it('deleting an agent deletes the archive made for it', async () => {
    const agent = await newAgent('goner');
    await a.agents.passages.create(agent, { text: 'ephemeral' });
    const [archive] = (await a.archives.list({ agent_id: agent })).getPaginatedItems();
    expect(archive.name).toBe("goner's Archive");
    await a.agents.delete(agent);
    await expect(a.archives.retrieve(archive.id)).rejects.toMatchObject({ status: 404 });
  });

  it("tenant B reaches none of tenant A's archives or passages", async () => {
    const agentA = await newAgent('private-a');
    const [p] = await a.agents.passages.create(agentA, { text: 'tenant A confidential plan' });
    const archive = (await a.archives.list({ agent_id: agentA })).getPaginatedItems()[0];
    const agentB = await newAgent('b', b);

    expect(await b.passages.search({ query: 'confidential plan' })).toEqual([]);
    await expect(b.archives.retrieve(archive.id)).rejects.toMatchObject({ status: 404 });
    await expect(b.agents.archives.attach(archive.id, { agent_id: agentB })).rejects.toMatchObject({
      status: 404,
    });
    await expect(b.agents.passages.list(agentA)).rejects.toMatchObject({ status: 404 });
    await expect(
      b.passages.search({ query: 'plan', archive_id: archive.id }),
    ).rejects.toMatchObject({
      status: 404,
    });
    const del = await api(
      t,
      'DELETE',
      `/v1/agents/${agentB}/archival-memory/${p.id}`,
      undefined,
      B,
    );
    expect(del.status).toBe(404);
    const delArchive = await api(
      t,
      'DELETE',
      `/v1/archives/${archive.id}/passages/${p.id}`,
      undefined,
      B,
    );
    expect(delArchive.status).toBe(404);
    expect((await b.archives.list()).getPaginatedItems()).toEqual([]);
    expect((await a.agents.passages.list(agentA)).map((x) => x.id)).toEqual([p.id]);
  });
});
