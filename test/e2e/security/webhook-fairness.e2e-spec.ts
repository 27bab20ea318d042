import { startApp, TestApp } from '../../support/app-harness';
import { startReceivers, until } from '../../support/receivers';
import { aCheck, api, port } from '../consent-helpers';

const KEYS = [
  { key: 'sk-a', tenant: 'team-a' },
  { key: 'sk-b', tenant: 'team-b' },
  { key: 'sk-c', tenant: 'team-c' },
];

/**
 * QA: the dispatcher claimed 20 due deliveries, waited for the slowest, then took the next 20, oldest first
 * over all tenants: a tenant whose receiver hangs held every slot for a whole request timeout, and every
 * other tenant's deliveries waited behind it. Now a slot is taken again as soon as an attempt ends, a
 * tenant holds at most webhooks.max_in_flight_per_tenant of them, and a free slot goes to the tenant with
 * the fewest open attempts.
 */
describe("security: one tenant's slow webhooks do not delay another tenant's", () => {
  let t: TestApp;
  let rx: Awaited<ReturnType<typeof startReceivers>>;
  const hooks: { id: string; key: string }[] = [];

  beforeEach(async () => {
    rx = await startReceivers(new Set(['/a', '/c']));
    t = await startApp({
      overrides: {
        auth: { api_keys: KEYS },
        webhooks: {
          max_in_flight: 4,
          max_in_flight_per_tenant: 2,
          // no attempt ends by itself during a test, and only events (not the timer) start them
          request_timeout_seconds: 300,
          claim_seconds: 301,
          poll_interval_seconds: 3600,
        },
      },
    });
  });
  afterEach(async () => {
    await rx.close(); // the held attempts fail now, so the app's shutdown need not wait for them
    for (const h of hooks.splice(0))
      await api(t, 'DELETE', `/v1/webhooks/${h.id}`, undefined, h.key);
    await t.close();
  });

  async function aWebhook(key: string, path: string): Promise<void> {
    const res = await api(
      t,
      'POST',
      '/v1/webhooks',
      { url: rx.url(path), events: ['consent.request'] },
      key,
    );
    expect(res.status).toBe(201);
    hooks.push({ id: res.body.id as string, key });
  }
  /** `n` consent requests of the tenant: one delivery each to each of its webhooks. */
  async function requests(tenantId: string, n: number): Promise<void> {
    for (let i = 0; i < n; i++)
      expect((await port(t).check(aCheck({ tenantId }))).kind).toBe('pending');
  }
  const count = (path: string) => rx.arrivals.filter((a) => a === path).length;

  it("tenant A's 12 deliveries to a receiver that never answers hold 2 slots; tenant B's delivery goes out while all of A's still hang", async () => {
    await aWebhook('sk-a', '/a');
    await requests('team-a', 12);
    await until(() => count('/a') === 2);
    await aWebhook('sk-b', '/b');
    await requests('team-b', 1);
    await until(() => count('/b') === 1);
    // B was sent while A's two attempts were still open, and A got no third slot
    expect(rx.held.map((h) => h.path)).toEqual(['/a', '/a']);
    expect(rx.arrivals).toEqual(['/a', '/a', '/b']);
    const b = (await api(t, 'GET', `/v1/webhooks/${hooks[1].id}/deliveries`, undefined, 'sk-b'))
      .body;
    expect(b).toEqual([expect.objectContaining({ status: 'delivered', attempts: 1 })]);
  });

  it('every slot held by two hanging tenants: the first slot that frees goes to tenant B (none open), not to the backlog of the tenant it freed from', async () => {
    await aWebhook('sk-a', '/a');
    await aWebhook('sk-c', '/c');
    await requests('team-a', 6);
    await requests('team-c', 6);
    await until(() => rx.held.length === 4); // max_in_flight: 2 of A, 2 of C
    await aWebhook('sk-b', '/b');
    await requests('team-b', 1);
    // B's delivery is stored and due, and no slot is free: it waits for one, not for a batch
    for (;;) {
      const list = await api(t, 'GET', `/v1/webhooks/${hooks[2].id}/deliveries`, undefined, 'sk-b');
      if (list.body.length === 1) break;
    }
    expect(count('/b')).toBe(0);
    rx.answerOne('/a'); // one of A's attempts ends
    await until(() => count('/a') === 3);
    // the freed slot went to B first; A's next attempt took the slot B's freed
    expect(rx.arrivals.slice(4)).toEqual(['/b', '/a']);
    expect(count('/c')).toBe(2);
  });
});
