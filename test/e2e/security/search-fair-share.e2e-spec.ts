/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ScanSlots } from '../../../src/database/scan-slots';
import { startApp, startAppProcess, TestApp } from '../../support/app-harness';
import { api, TENANT_A, TENANT_B, TWO_TENANTS } from '../../support/processing-fixtures';
import type { ServerProcess } from '../../support/server-process';

/**
 * A hostile tenant's searches against everybody else's requests. One substring search scans up to
 * `limits.search_scan_rows` × `search_scan_chars` (20 MB by default, 0.2 s on SQLite), and the database takes
 * statements in the order they come: B's forty message searches at once held A's `GET /v1/quotas` 7 s, and
 * a model step of 128 conversation_search calls 30 s. Scans now share fair slots (`limits.search_scans_*`):
 * B's wait behind B's own, A's goes next, and past the waiting bound B is told 429 SEARCH_BUSY.
 */
describe('security: one tenant’s searches do not hold another’s', () => {
  let t: TestApp;
  let server: ServerProcess & { url: string };
  let dir: string;
  let agentA: string;

  beforeAll(async () => {
    // a process of its own: a scan blocks the server's event loop, and the clients must not wait with it
    dir = mkdtempSync(path.join(tmpdir(), 'agent-server-test-'));
    server = await startAppProcess(dir, {
      overrides: {
        ...TWO_TENANTS,
        limits: {
          search_scan_rows: 2000,
          search_scan_chars: 2000,
          search_scans_in_flight: 4,
          search_scans_in_flight_per_tenant: 1,
          search_scans_waiting_per_tenant: 8,
        },
      },
    });
    t = { baseUrl: server.url } as TestApp;
    // B's history: 2,000 messages of 2,000 characters, so each of its scans reads 4 MB
    const agentB = (await api(t, 'POST', '/v1/agents/', { name: 'hoarder' }, TENANT_B)).body.id;
    for (let n = 0; n < 5; n++) {
      const messages = Array.from({ length: 400 }, (_, i) => ({
        role: 'user',
        content: `note ${n}-${i} `.repeat(200).slice(0, 2000),
      }));
      const r = await api(t, 'POST', `/v1/agents/${agentB}/messages`, { messages }, TENANT_B);
      expect(r.status).toBe(200);
    }
    agentA = (await api(t, 'POST', '/v1/agents/', { name: 'small' }, TENANT_A)).body.id;
    await api(
      t,
      'POST',
      `/v1/agents/${agentA}/messages`,
      { messages: [{ role: 'user', content: 'hello' }] },
      TENANT_A,
    );
  }, 120_000);
  afterAll(async () => {
    await server.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  const search = (who: Record<string, string>, query: string) =>
    api(t, 'POST', '/v1/messages/search', { query }, who);

  it('a search read in chunks still finds the oldest rows of its scan, newest first, up to its limit', async () => {
    // only B's first request says "note 0-" (its 400 messages, and the model's answer echoing the last one):
    // the end of B's scan, past its first chunks
    const r = await api(t, 'POST', '/v1/messages/search', { query: 'note 0-', limit: 3 }, TENANT_B);
    expect(r.status).toBe(200);
    expect(r.body.map((m: any) => (m.content as string).slice(0, 10))).toEqual([
      'You said: ',
      'note 0-399',
      'note 0-398',
    ]);
  });

  it('B floods thirty searches: the ones past the waiting bound are 429 SEARCH_BUSY, none a 5xx', async () => {
    const all = await Promise.all(
      Array.from({ length: 30 }, (_, i) => search(TENANT_B, `flood${i}`)),
    );
    const refused = all.filter((r) => r.status === 429);
    expect(all.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0].body).toMatchObject({
      code: 'SEARCH_BUSY',
      details: { limit: 'limits.search_scans_waiting_per_tenant', max: 8 },
    });
    // A is never refused for B's flood
    expect((await search(TENANT_A, 'hello')).status).toBe(200);
  });
});

/**
 * The order the slots give, without racing the clock: B's one slot is held, so B's searches all wait
 * (whatever the machine's speed); A's is answered while they do, and B's run once the slot is free.
 */
describe('security: a tenant’s waiting searches do not hold another’s', () => {
  let t: TestApp;
  const agents: Record<string, string> = {};

  beforeAll(async () => {
    t = await startApp({
      overrides: { ...TWO_TENANTS, limits: { search_scans_in_flight_per_tenant: 1 } },
    });
    for (const [tenant, key] of [
      ['a', TENANT_A],
      ['b', TENANT_B],
    ] as const) {
      const agent = await api(t, 'POST', '/v1/agents/', { name: `talk-${tenant}` }, key);
      agents[tenant] = agent.body.id;
      const said = await api(
        t,
        'POST',
        `/v1/agents/${agent.body.id}/messages`,
        { messages: [{ role: 'user', content: 'hello there' }] },
        key,
      );
      expect(said.status).toBe(200);
    }
  });
  afterAll(() => t.close());

  it('B sends eight searches while its slot is busy, then A one: A is answered while all of B’s wait', async () => {
    let release!: () => void;
    const held = t.app
      .get(ScanSlots)
      .run('tenant-b', () => new Promise<void>((done) => (release = done)));
    const answered: string[] = [];
    const bs = Array.from({ length: 8 }, (_, i) =>
      api(t, 'POST', '/v1/messages/search', { query: `hello ${i}` }, TENANT_B).then((r) => {
        answered.push(`B${i}`);
        return r;
      }),
    );
    try {
      const a = await api(t, 'POST', '/v1/messages/search', { query: 'hello' }, TENANT_A);
      expect(a.status).toBe(200);
      expect(new Set(a.body.map((m: any) => m.agent_id))).toEqual(new Set([agents.a]));
      expect(answered).toEqual([]);
    } finally {
      release();
      await held;
    }
    const all = await Promise.all(bs);
    expect(all.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(answered).toHaveLength(8);
  });
});

/**
 * Archival memory's vector search reads up to `models.embeddings.max_scan_passages` vectors and scores each
 * (a median 180 ms on SQLite at 10,000 passages, docs/memory.md); it took no scan slot, so a tenant's
 * vector and hybrid searches ran beside every other scan, as many at once as it sent. Now its scan takes
 * one of the tenant's slots, as the other searches do.
 */
describe('security: archival vector search takes its tenant’s scan slots', () => {
  let t: TestApp;
  const agents: Record<string, string> = {};

  beforeAll(async () => {
    t = await startApp({
      overrides: {
        ...TWO_TENANTS,
        models: {
          embeddings: {
            providers: [
              { name: 'local', type: 'hashed', models: [{ name: 'bow-64', dimensions: 64 }] },
            ],
            default_model: 'local/bow-64',
          },
        },
        limits: { search_scans_in_flight_per_tenant: 1, search_scans_waiting_per_tenant: 0 },
      },
    });
    for (const [tenant, key] of [
      ['a', TENANT_A],
      ['b', TENANT_B],
    ] as const) {
      const agent = await api(t, 'POST', '/v1/agents/', { name: `vec-${tenant}` }, key);
      agents[tenant] = agent.body.id;
      const text = 'my dog loves long walks';
      const put = await api(
        t,
        'POST',
        `/v1/agents/${agent.body.id}/archival-memory`,
        { text },
        key,
      );
      expect(put.status).toBe(200);
    }
  });
  afterAll(() => t.close());

  const search = (who: 'a' | 'b', search_mode: string) =>
    api(
      t,
      'POST',
      '/v1/passages/search',
      { query: 'dog walks', agent_id: agents[who], search_mode },
      who === 'a' ? TENANT_A : TENANT_B,
    );

  it('B holds its one scan: its vector and hybrid searches wait for it (none may wait here: 429 SEARCH_BUSY); A searches', async () => {
    let release!: () => void;
    const held = t.app
      .get(ScanSlots)
      .run('tenant-b', () => new Promise<void>((done) => (release = done)));
    try {
      for (const mode of ['vector', 'hybrid']) {
        const busy = await search('b', mode);
        expect([busy.status, busy.body.code]).toEqual([429, 'SEARCH_BUSY']);
        const a = await search('a', mode);
        expect(a.status).toBe(200);
        expect(a.body.map((r: any) => r.passage.text)).toEqual(['my dog loves long walks']);
      }
    } finally {
      release();
      await held;
    }
    const b = await search('b', 'vector');
    expect(b.status).toBe(200);
    expect(b.body.map((r: any) => r.passage.text)).toEqual(['my dog loves long walks']);
  });
});
