/**
 * PostgreSQL agent leases against concurrent transactions (docs/scale-out.md, fencing). Found by the
 * soak (cluster-soak.e2e-spec.ts): the lease keeper's renewal of several agents and a group commit
 * fencing writes of several agents took the same lease rows in opposite orders, and PostgreSQL broke the
 * deadlock after a second by failing the renewal ("lease keeper: deadlock detected"), every write of
 * the instance waiting meanwhile. PostgreSQL only: skipped, with the reason printed, without
 * TEST_DATABASE_URL.
 */
import { DataSource } from 'typeorm';
import { PgAgentLeases } from '../../src/cluster/pg-agent-leases';
import { startApp, TestApp } from '../support/app-harness';

const TENANT = 'default';
const PG = process.env.TEST_DATABASE_URL;

describe('PostgreSQL agent leases under concurrent writes', () => {
  let t: TestApp;
  let ds: DataSource;
  let schema: string | null;

  beforeAll(async () => {
    if (!PG) {
      console.log('agent leases suite skipped: TEST_DATABASE_URL is not set');
      return;
    }
    t = await startApp();
    ds = t.app.get(DataSource);
    schema = t.config.database.schema;
  });
  afterAll(() => t?.close());

  const leasesOf = (owner: string, durationMs = 60_000) =>
    new PgAgentLeases(ds, {
      schema,
      owner: `${owner}/1`,
      instanceId: owner,
      durationMs,
      renewIntervalMs: Math.floor(durationMs / 4),
    });

  const poll = () => new Promise((r) => setTimeout(r, 10));

  /** Polls until `done`, or until a statement on the leases waits for a lock. */
  async function settledOrWaiting(done: () => boolean): Promise<void> {
    for (;;) {
      if (done()) return;
      const rows: { n: string }[] = await ds.query(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database()
         AND wait_event_type = 'Lock' AND query LIKE '%agent_leases%'`,
      );
      if (Number(rows[0].n) > 0) return;
      await poll();
    }
  }

  async function lapsed(agentId: string): Promise<boolean> {
    const rows: { lapsed: boolean }[] = await ds.query(
      `SELECT expires_at < (extract(epoch from clock_timestamp()) * 1000)::bigint AS lapsed
       FROM ${schema ? `"${schema}".` : ''}agent_leases WHERE agent_id = $1`,
      [agentId],
    );
    return rows[0].lapsed;
  }

  it('the keeper renews two agents while one write fences both, in the other order: both go through', async () => {
    if (!PG) return;
    const keeper = leasesOf('keeper');
    // b's row is stored first, so a scan of the table renews b before a
    expect(await keeper.acquire(TENANT, 'agent-b')).toBe('fresh');
    expect(await keeper.acquire(TENANT, 'agent-a')).toBe('fresh');
    let renewal: Promise<string[]> | null = null;
    let renewed = false;
    const write = ds.transaction(async (em) => {
      await keeper.guard(em, 'agent-a', keeper.tenure('agent-a'));
      renewal = keeper.renew(['agent-a', 'agent-b']);
      void renewal.finally(() => (renewed = true)).catch(() => undefined);
      await settledOrWaiting(() => renewed);
      await keeper.guard(em, 'agent-b', keeper.tenure('agent-b'));
    });
    await expect(write).resolves.toBeUndefined();
    await expect(renewal).resolves.toEqual([]);
  });

  it('a takeover waits for the write the last holder has in flight, which then passes; the next one is refused', async () => {
    if (!PG) return;
    const stalled = leasesOf('stalled', 300);
    const next = leasesOf('next');
    expect(await stalled.acquire(TENANT, 'agent-c')).toBe('fresh');
    const tenure = stalled.tenure('agent-c');
    const order: string[] = [];
    let taken = false;
    const takeover = ds.transaction(async (em) => {
      await stalled.guard(em, 'agent-c', tenure);
      // the lease lapses while the write is in flight (read by the database's clock, as leases are)
      while (!(await lapsed('agent-c'))) await poll();
      const took = next.acquire(TENANT, 'agent-c').then((got) => {
        order.push(`taken ${String(got)}`);
        taken = true;
      });
      await settledOrWaiting(() => taken);
      order.push('write committed');
      return { took }; // (not the promise itself: the transaction would wait for it to commit)
    });
    await (
      await takeover
    ).took;
    expect(order).toEqual(['write committed', 'taken fresh']);
    await expect(
      ds.transaction((em) => stalled.guard(em, 'agent-c', tenure)),
    ).rejects.toMatchObject({ code: 'LEASE_LOST' });
  });
});
