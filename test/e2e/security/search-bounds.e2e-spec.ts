import type { Database } from 'better-sqlite3';
import { DataSource } from 'typeorm';
import { startApp, TestApp } from '../../support/app-harness';
import { api } from '../consent-helpers';

/**
 * QA (exhaustion): substring searches scanned without bound on the event loop. conversation_search with a
 * 20,000-character query froze the server 28 s; `GET /v1/blocks/?value_search=` with 200 characters over
 * 20 MB of blocks 14 s. The tool's query is bounded like the API's (1000 characters: an error text to the
 * model past it), and one search scans at most the newest `limits.search_scan_rows` rows of its scope, the
 * first `limits.search_scan_chars` characters of each, with instr/strpos rather than LIKE '%…%'.
 */
describe('security: substring searches are bounded', () => {
  let t: TestApp;
  const A = 'key-tenant-a';
  const SCAN_ROWS = 60;
  const SCAN_CHARS = 20_000;

  beforeAll(async () => {
    t = await startApp({
      overrides: {
        auth: { api_keys: [{ key: A, tenant: 'tenant-a' }] },
        limits: { search_scan_rows: SCAN_ROWS, search_scan_chars: SCAN_CHARS },
      },
    });
  });
  afterAll(() => t.close());

  const send = async (agentId: string, content: string) =>
    api(t, 'POST', `/v1/agents/${agentId}/messages`, { messages: [{ role: 'user', content }] }, A);

  it('conversation_search with a 20,000-character query: an error text to the model, at once', async () => {
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      {
        model_script: [
          {
            tool_calls: [{ name: 'conversation_search', arguments: { query: 'a'.repeat(20_000) } }],
          },
        ],
      },
      A,
    );
    const res = await send(agent.body.id, 'a'.repeat(100_000));
    expect(res.status).toBe(200);
    const ret = res.body.messages.find(
      (m: { message_type: string }) => m.message_type === 'tool_return_message',
    );
    expect(ret.tool_return).toMatch(/query is 20000 characters; at most 1000/);
  });

  it('value_search with an adversarial 200-character query over 50 blocks of 100,000 characters: answered, nothing found', async () => {
    for (let i = 0; i < 50; i++) {
      const r = await api(
        t,
        'POST',
        '/v1/blocks/',
        { label: `big${i}`, value: 'a'.repeat(99_990), limit: 100_000 },
        A,
      );
      expect(r.status).toBe(200);
    }
    const res = await api(t, 'GET', `/v1/blocks/?value_search=${'a'.repeat(199)}b`, undefined, A);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  it('only the newest search_scan_rows blocks, and their first search_scan_chars characters, are searched', async () => {
    const block = async (label: string, value: string) =>
      (await api(t, 'POST', '/v1/blocks/', { label, value, limit: 100_000 }, A)).body.id;
    const old = await block('old', 'needle-old');
    for (let i = 0; i < SCAN_ROWS; i++) await block(`filler${i}`, 'hay');
    const tail = await block('tail', 'x'.repeat(SCAN_CHARS) + 'needle-tail');
    const fresh = await block('fresh', 'needle-fresh');
    const found = (await api(t, 'GET', '/v1/blocks/?value_search=needle', undefined, A)).body.map(
      (b: { id: string }) => b.id,
    );
    expect(found).toEqual([fresh]);
    expect(found).not.toContain(old);
    expect(found).not.toContain(tail);
    // a label filter narrows the scan first: the old block is found among its label's blocks
    const byLabel = await api(t, 'GET', '/v1/blocks/?label=old&value_search=needle', undefined, A);
    expect(byLabel.body.map((b: { id: string }) => b.id)).toEqual([old]);
  });

  it('conversation summary_search looks at the newest search_scan_rows conversations, not every summary', async () => {
    // it was LIKE '%…%' over every summary (10,000 characters each), which backtracks: 2,000 summaries of
    // a's searched for 199 a's and a b held the server 5 s (the quota's 100,000, minutes)
    const agent = (await api(t, 'POST', '/v1/agents/', {}, A)).body.id;
    const conversation = async (summary: string) =>
      (await api(t, 'POST', `/v1/conversations/?agent_id=${agent}`, { summary }, A)).body.id;
    const old = await conversation('needle-old');
    for (let i = 0; i < SCAN_ROWS; i++) await conversation('hay');
    const fresh = await conversation('needle-fresh');
    const found = await api(t, 'GET', `/v1/conversations/?summary_search=NEEDLE`, undefined, A);
    expect(found.status).toBe(200);
    expect(found.body.map((c: { id: string }) => c.id)).toEqual([fresh]);
    expect(found.body.map((c: { id: string }) => c.id)).not.toContain(old);
  });

  it('tag and agent name filters are evaluated with instr, never a backtracking LIKE (SQLite)', async () => {
    if (process.env.TEST_DATABASE_URL) return; // the statements are read off SQLite's connection
    // LIKE '%…%' backtracks: 200,000 tags of 200 a's searched for 199 a's and a b held the server 3.5 s
    const db = (t.app.get(DataSource).driver as unknown as { databaseConnection: Database })
      .databaseConnection;
    const prepared = jest.spyOn(db, 'prepare');
    try {
      await api(t, 'POST', '/v1/agents/', { name: 'tagged-agent', tags: ['findable-tag'] }, A);
      const tags = await api(t, 'GET', '/v1/tags/?query_text=FINDABLE', undefined, A);
      expect(tags.body).toEqual(['findable-tag']);
      const agents = await api(t, 'GET', '/v1/agents/?query_text=TAGGED', undefined, A);
      expect(agents.body.map((a: { name: string }) => a.name)).toEqual(['tagged-agent']);
      const statements = prepared.mock.calls.map(([sql]) => sql);
      expect(statements.filter((sql) => /\bLIKE\b/i.test(sql))).toEqual([]);
    } finally {
      prepared.mockRestore();
    }
  });

  it("a tool's update looks up the agents using it with instr, never a backtracking LIKE: a rename of a tool in use is still 409 (SQLite)", async () => {
    if (process.env.TEST_DATABASE_URL) return; // the statements are read off SQLite's connection
    // it was LIKE '%"name"%' over every agent's tool list, which backtracks like the filters above
    const tool = (name: string) => ({
      name,
      description: 'a lookup',
      safety: 'read_only',
      kind: 'http',
      http: { url: 'http://127.0.0.1:9/lookup', method: 'POST' },
    });
    const used = await api(t, 'POST', '/v1/tools/', tool('lookup'), A);
    const other = await api(t, 'POST', '/v1/tools/', tool('lookup_v2'), A);
    const agentOf = async (name: string, tools: string[]) =>
      (await api(t, 'POST', '/v1/agents/', { name, tools, include_base_tools: false }, A)).body.id;
    const user = await agentOf('uses-lookup', ['lookup']);
    await agentOf('uses-lookup-v2', ['lookup_v2']);
    const db = (t.app.get(DataSource).driver as unknown as { databaseConnection: Database })
      .databaseConnection;
    const prepared = jest.spyOn(db, 'prepare');
    try {
      const renamed = await api(t, 'PATCH', `/v1/tools/${used.body.id}`, { name: 'lookup_v3' }, A);
      expect(renamed.status).toBe(409);
      expect(renamed.body).toMatchObject({ code: 'TOOL_IN_USE', details: { agent_ids: [user] } });
      // "lookup" is inside "lookup_v2"'s name, not its quoted name: the agent using lookup_v2 is not a user
      const unused = await api(t, 'DELETE', `/v1/agents/${user}`, undefined, A);
      expect(unused.status).toBe(200);
      const free = await api(t, 'PATCH', `/v1/tools/${used.body.id}`, { name: 'lookup_v3' }, A);
      expect([free.status, free.body.name]).toEqual([200, 'lookup_v3']);
      expect(other.status).toBe(200);
      const statements = prepared.mock.calls.map(([sql]) => sql);
      expect(statements.filter((sql) => /\bLIKE\b/i.test(sql))).toEqual([]);
    } finally {
      prepared.mockRestore();
    }
  });

  it('message search looks at the newest search_scan_rows messages of its scope', async () => {
    const agent = await api(t, 'POST', '/v1/agents/', { model_script: [{ content: 'ok' }] }, A);
    await send(agent.body.id, 'needle-first');
    for (let i = 0; i < SCAN_ROWS / 2; i++) await send(agent.body.id, `hay ${i}`);
    await send(agent.body.id, 'needle-last');
    const hits = await api(
      t,
      'POST',
      '/v1/messages/search',
      { query: 'NEEDLE', agent_id: agent.body.id },
      A,
    );
    expect(hits.status).toBe(200);
    expect(hits.body.map((h: { content: string }) => h.content)).toEqual(['needle-last']);
  });
});
