import { startApp, TestApp } from '../../support/app-harness';
import {
  api,
  createAgent,
  say,
  TENANT_A,
  TENANT_B,
  TWO_TENANTS,
} from '../../support/processing-fixtures';
import { startReceivers, until } from '../../support/receivers';

/**
 * Probe: a tenant started many async runs whose `callback_url` never answered; each post hung for the
 * webhook timeout and nothing bounded how many were open at once (one socket and its buffers each). Now
 * callback posts share slots (webhooks.callback_max_in_flight, _per_tenant), the rest wait in the order
 * their runs ended, and past webhooks.callback_max_waiting_per_tenant a run's callback is not sent and the
 * run says why.
 */
describe('security: run callbacks to a target that hangs', () => {
  let t: TestApp;
  let rx: Awaited<ReturnType<typeof startReceivers>>;

  beforeAll(async () => {
    // A's target never answers until the test says so
    rx = await startReceivers(new Set(Array.from({ length: 12 }, (_, i) => `/a${i}`)));
    t = await startApp({
      overrides: {
        ...TWO_TENANTS,
        webhooks: {
          callback_max_in_flight: 3,
          callback_max_in_flight_per_tenant: 2,
          callback_max_waiting_per_tenant: 3,
          request_timeout_seconds: 300, // no post ends by itself during the test
          claim_seconds: 301,
        },
      },
    });
  });
  afterAll(async () => {
    await rx.close(); // the held posts fail now, so the app's shutdown need not wait for them
    await t.close();
  });

  const run = async (headers: Record<string, string>, id: string) =>
    (await api(t, 'GET', `/v1/runs/${id}`, undefined, headers)).body;

  it("tenant A's 12 runs call back a URL that never answers: 2 posts open, 3 wait in order, 7 not sent and said so; tenant B's goes out meanwhile", async () => {
    const a = await createAgent(t, null, {}, TENANT_A);
    const runs: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await api(
        t,
        'POST',
        `/v1/agents/${a}/messages/async`,
        say(`hi ${i}`, { callback_url: rx.url(`/a${i}`) }),
        TENANT_A,
      );
      expect(res.status).toBe(202);
      runs.push(res.body.id as string);
    }
    // every run ended: each callback was posted, queued or refused as its run ended
    await until(async () =>
      (await Promise.all(runs.map((id) => run(TENANT_A, id)))).every(
        (r) => r.status === 'completed',
      ),
    );

    const b = await createAgent(t, null, {}, TENANT_B);
    const sent = await api(
      t,
      'POST',
      `/v1/agents/${b}/messages/async`,
      say('hi', { callback_url: rx.url('/b') }),
      TENANT_B,
    );
    await until(async () => (await run(TENANT_B, sent.body.id)).callback_status_code === 200);
    // B went out while A's two posts hung; A got no third socket
    expect(rx.arrivals).toEqual(['/a0', '/a1', '/b']);

    await until(async () => Boolean((await run(TENANT_A, runs[11])).callback_error));
    for (const id of runs.slice(5))
      expect(await run(TENANT_A, id)).toMatchObject({
        callback_sent_at: null,
        callback_status_code: null,
        callback_error: expect.stringContaining('webhooks.callback_max_waiting_per_tenant'),
      });
    for (const id of runs.slice(0, 5))
      expect((await run(TENANT_A, id)).callback_sent_at).toBeNull();

    // as A's target answers one, its next waiting callback goes, in the order their runs ended
    for (const n of [0, 1, 2]) {
      rx.answerOne(`/a${n}`);
      await until(() => rx.arrivals.includes(`/a${n + 2}`));
    }
    rx.answerOne('/a3');
    rx.answerOne('/a4');
    await until(async () => (await run(TENANT_A, runs[4])).callback_status_code === 200);
    expect(rx.arrivals.filter((p) => p.startsWith('/a'))).toEqual([
      '/a0',
      '/a1',
      '/a2',
      '/a3',
      '/a4',
    ]);
  });
});
