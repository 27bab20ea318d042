/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startAppProcess, TestApp } from '../../support/app-harness';
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

  it('B sends eight searches at once, then A one: A is answered before B’s waiting ones', async () => {
    const answered: string[] = [];
    const tagged = (tag: string, r: Promise<{ status: number; body: any }>) =>
      r.then((x) => (answered.push(tag), x));
    const bs = Array.from({ length: 8 }, (_, i) => tagged(`B${i}`, search(TENANT_B, `zz${i}`)));
    const a = await tagged('A', search(TENANT_A, 'hello'));
    expect(a.status).toBe(200);
    expect(new Set(a.body.map((m: any) => m.agent_id))).toEqual(new Set([agentA]));
    const all = await Promise.all(bs);
    expect(all.map((r) => r.status)).toEqual(Array(8).fill(200));
    // before: A's scan waited for all of B's (answered 9th); now for B's running one at most
    expect(answered.indexOf('A')).toBeLessThanOrEqual(2);
  });

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
