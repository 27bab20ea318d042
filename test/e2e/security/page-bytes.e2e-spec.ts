import Letta from '@letta-ai/letta-client';
import { startApp, TestApp } from '../../support/app-harness';
import { api } from '../consent-helpers';

/**
 * QA (exhaustion): list pages were bounded by a count alone. A page of 1,000 messages of 1 MB is a 1 GB
 * answer, read whole from the database and built in memory. `limits.max_page_bytes` bounds a page's items
 * together (estimated): past it the page ends early, a shorter page of at least one item, never a 500, and
 * the SDK's auto-pagination (which pages until an empty page) still sees every item once.
 */
describe('security: a list page is bounded by its bytes', () => {
  let t: TestApp;
  let client: Letta;
  const A = 'key-tenant-a';
  const MAX_PAGE_BYTES = 64 * 1024;
  const LARGE = 20_000; // characters of each large item: three fit a page, a fourth does not

  beforeAll(async () => {
    t = await startApp({
      overrides: {
        auth: { api_keys: [{ key: A, tenant: 'tenant-a' }] },
        limits: { max_page_bytes: MAX_PAGE_BYTES },
      },
    });
    client = new Letta({ baseURL: t.baseUrl, apiKey: A, maxRetries: 0 });
  });
  afterAll(() => t.close());

  /** Every id of a list, paged by hand `limit` at a time with `after` (small pages, never cut). */
  const pagedBy = async (path: string, limit: number) => {
    const ids: string[] = [];
    for (let after = ''; ;) {
      const sep = path.includes('?') ? '&' : '?';
      const res = await api(t, 'GET', `${path}${sep}limit=${limit}${after}`, undefined, A);
      expect(res.status).toBe(200);
      if (!res.body.length) return ids;
      ids.push(...res.body.map((x: { id: string }) => x.id));
      after = `&after=${res.body[res.body.length - 1].id}`;
    }
  };

  it('40 messages of 20 KB, 1,000 asked at once: a short page, and the SDK pages on to every one', async () => {
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      {
        initial_message_sequence: Array.from({ length: 40 }, (_, i) => ({
          role: 'user',
          content: `${i} ${'m'.repeat(LARGE)}`,
        })),
      },
      A,
    );
    expect(agent.status).toBe(200);
    const path = `/v1/agents/${agent.body.id}/messages`;
    const page = await api(t, 'GET', `${path}?limit=1000`, undefined, A);
    expect(page.status).toBe(200);
    expect(page.body.length).toBeGreaterThan(0);
    expect(page.body.length).toBeLessThan(40);
    expect(JSON.stringify(page.body).length).toBeLessThan(MAX_PAGE_BYTES);

    const all = await pagedBy(path, 2);
    expect(all.length).toBeGreaterThanOrEqual(40);
    const seen: string[] = [];
    for await (const m of client.agents.messages.list(agent.body.id, { limit: 1000 }))
      seen.push(m.id);
    expect(seen).toEqual(all);
  });

  it('agents of 20 KB system prompts, 1,000 asked at once: short pages forwards and backwards, none missed', async () => {
    const made: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await api(
        t,
        'POST',
        '/v1/agents/',
        { name: `big-${i}`, system: 's'.repeat(LARGE) },
        A,
      );
      expect(res.status).toBe(200);
      made.push(res.body.id);
    }
    const page = await api(t, 'GET', '/v1/agents/?limit=1000', undefined, A);
    expect(page.status).toBe(200);
    expect(page.body.length).toBeGreaterThan(0);
    expect(page.body.length).toBeLessThan(8);

    const forward: string[] = [];
    for await (const a of client.agents.list({ limit: 1000, order: 'asc' })) forward.push(a.id);
    expect(forward.filter((id) => made.includes(id))).toEqual(made);
    // backwards from the newest, as the SDK pages with `before` (the first id of each page)
    const back: string[] = [];
    for await (const a of client.agents.list({ limit: 1000, order: 'asc', before: made[7] }))
      back.push(a.id);
    expect(new Set(back)).toEqual(new Set(forward.slice(0, forward.indexOf(made[7]))));
  });

  it("an agent's tools of 40 KB schemas (a list held whole): a short page, paged on to every one", async () => {
    const tools: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await api(
        t,
        'POST',
        '/v1/tools/',
        {
          name: `wide_${i}`,
          safety: 'read_only',
          kind: 'http',
          http: { url: 'http://127.0.0.1:9/x', method: 'POST' },
          parameters: {
            type: 'object',
            properties: { q: { type: 'string', description: 'd'.repeat(40_000) } },
          },
        },
        A,
      );
      expect(res.status).toBe(200);
      tools.push(res.body.id);
    }
    const agent = await api(t, 'POST', '/v1/agents/', { tool_ids: tools }, A);
    expect(agent.status).toBe(200);
    const path = `/v1/agents/${agent.body.id}/tools`;
    const page = await api(t, 'GET', `${path}?limit=1000`, undefined, A);
    expect(page.status).toBe(200);
    expect(page.body.length).toBeLessThan(agent.body.tools.length);
    const seen: string[] = [];
    for await (const tool of client.agents.tools.list(agent.body.id, { limit: 1000 }))
      seen.push(tool.id);
    expect(seen).toEqual(await pagedBy(path, 1));
    expect(seen).toEqual(expect.arrayContaining(tools));
  });

  it('one item larger than the whole budget is still a page of one: a client always gets somewhere', async () => {
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      {
        initial_message_sequence: [
          { role: 'user', content: 'h'.repeat(MAX_PAGE_BYTES * 2) },
          { role: 'user', content: 'small' },
        ],
      },
      A,
    );
    expect(agent.status).toBe(200);
    const page = await api(
      t,
      'GET',
      `/v1/agents/${agent.body.id}/messages?order=asc&limit=1000`,
      undefined,
      A,
    );
    expect(page.status).toBe(200);
    expect(page.body).toHaveLength(1);
    const next = await api(
      t,
      'GET',
      `/v1/agents/${agent.body.id}/messages?order=asc&limit=1000&after=${page.body[0].id}`,
      undefined,
      A,
    );
    expect(next.body.map((m: { content: string }) => m.content)).toEqual(['small']);
  });
});
