import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { RunCallbacks } from '../../src/processing/run-callbacks';
import { startApp, startAppProcess, TestApp } from '../support/app-harness';
import { api, createAgent, runEnded, say } from '../support/processing-fixtures';
import { startReceivers, until } from '../support/receivers';
import { fakeClock } from './consent-helpers';

const callbackOf = async (t: TestApp, runId: string) =>
  (await api(t, 'GET', `/v1/runs/${runId}`)).body;

/**
 * Letta's `callback_url` is stored with the run's end and sent as webhook deliveries are (claimed,
 * retried), so a crash, a shutdown or a second instance neither loses it nor sends it twice.
 */
describe('run callbacks: stored with the run, sent once', () => {
  it('kill -9 after two runs ended, one callback posted (no answer yet) and one waiting for the slot: the restarted app sends the waiting one once, and the unanswered one again', async () => {
    const hang = new Set(['/first']);
    const rx = await startReceivers(hang);
    const dir = mkdtempSync(path.join(tmpdir(), 'agent-server-test-'));
    // one post at a time for the tenant: the second callback waits behind the first, which never answers
    const overrides = {
      webhooks: {
        callback_max_in_flight_per_tenant: 1,
        request_timeout_seconds: 300,
        claim_seconds: 301, // past the killed instance's post (the restarted app's clock passes it)
      },
    };
    let t: TestApp | null = null;
    try {
      const server = await startAppProcess(dir, { overrides });
      let first: string, second: string;
      try {
        const at = { baseUrl: server.url } as TestApp;
        const agent = await createAgent(at, null);
        const send = async (text: string, to: string) =>
          (
            await api(at, 'POST', `/v1/agents/${agent}/messages/async`, {
              ...say(text),
              callback_url: rx.url(to),
            })
          ).body.id as string;
        first = await send('one', '/first');
        second = await send('two', '/second');
        expect((await runEnded(at, second)).status).toBe('completed');
        await until(() => rx.arrivals.includes('/first'));
        expect(rx.arrivals).toEqual(['/first']); // the second's callback is stored, not sent
      } finally {
        await server.kill('SIGKILL');
      }

      hang.clear(); // the target answers from now on
      t = await startApp({ dir, overrides });
      await until(async () => (await callbackOf(t!, second)).callback_status_code === 200);
      // the first's post had no answer when its instance died: its outcome unknown, it is posted again
      // once its claim has lapsed
      fakeClock(t).advance(302_000);
      await until(async () => (await callbackOf(t!, first)).callback_status_code === 200);
      await t.app.get(RunCallbacks).deliverDue(); // nothing else is due
      expect(rx.arrivals.filter((a) => a === '/second')).toHaveLength(1);
      expect(rx.arrivals.filter((a) => a === '/first')).toHaveLength(2);
      const body = JSON.parse(rx.bodies.find((b) => b.path === '/second')!.body);
      expect(body).toEqual({
        job_id: second!,
        run_id: second!,
        agent_id: expect.stringMatching(/^agent-/),
        status: 'completed',
        stop_reason: 'end_turn',
        completed_at: (await callbackOf(t, second!)).completed_at,
        metadata: {},
      });
      // every attempt of one callback sends the same body
      const firsts = rx.bodies.filter((b) => b.path === '/first').map((b) => b.body);
      expect(new Set(firsts).size).toBe(1);
    } finally {
      await t?.close();
      await rx.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a target that answers 500 first: retried with backoff (webhooks.retry_base_seconds), the run shows the last attempt', async () => {
    const rx = await startReceivers(new Set(), (_p, n) => (n === 1 ? 500 : 200));
    const t = await startApp();
    const clock = fakeClock(t);
    try {
      const agent = await createAgent(t, null);
      const run = (
        await api(t, 'POST', `/v1/agents/${agent}/messages/async`, {
          ...say('hi'),
          callback_url: rx.url('/flaky'),
        })
      ).body.id as string;
      await runEnded(t, run);
      const callbacks = t.app.get(RunCallbacks);
      await until(() => rx.arrivals.length === 1);
      await callbacks.deliverDue();
      expect(await callbackOf(t, run)).toMatchObject({
        callback_status_code: 500,
        callback_error: 'the target answered HTTP 500',
      });
      await callbacks.deliverDue(); // not due yet
      expect(rx.arrivals).toHaveLength(1);
      clock.advance(t.config.webhooks.retry_base_seconds * 1000);
      await callbacks.deliverDue();
      expect(rx.arrivals).toEqual(['/flaky', '/flaky']);
      expect(await callbackOf(t, run)).toMatchObject({
        callback_sent_at: new Date(clock.now).toISOString(),
        callback_status_code: 200,
        callback_error: null,
      });
    } finally {
      clock.restore();
      await t.close();
      await rx.close();
    }
  });

  // two instances on one database: PostgreSQL only (SQLite has one process)
  const pgOnly = process.env.TEST_DATABASE_URL ? it : it.skip;
  pgOnly(
    'two instances on one PostgreSQL database: 10 callbacks that failed once are each retried by exactly one of them',
    async () => {
      const rx = await startReceivers(new Set(), (_p, n) => (n === 1 ? 500 : 200));
      // every callback fits in either instance's slots: each tries to take all of them at once
      const webhooks = { callback_max_in_flight: 20, callback_max_in_flight_per_tenant: 20 };
      const one = await startApp({
        keepDir: true,
        overrides: { cluster: { instance_id: 'callbacks-1' }, webhooks },
      });
      const two = await startApp({
        dir: one.dir,
        overrides: { cluster: { instance_id: 'callbacks-2' }, webhooks },
      });
      const start = Date.now();
      const clocks = [fakeClock(one, start), fakeClock(two, start)];
      try {
        const agent = await createAgent(one, null);
        const runs: string[] = [];
        for (let i = 0; i < 10; i++)
          runs.push(
            (
              await api(one, 'POST', `/v1/agents/${agent}/messages/async`, {
                ...say(`hi ${i}`),
                callback_url: rx.url(`/c${i}`),
              })
            ).body.id as string,
          );
        for (const r of runs) await runEnded(one, r);
        const pumps = [one, two].map((t) => t.app.get(RunCallbacks));
        await until(() => rx.arrivals.length === 10);
        await Promise.all(pumps.map((p) => p.deliverDue())); // every first attempt recorded
        clocks.forEach((c) => c.advance(3_600_000)); // every retry is due, on both instances
        await Promise.all(pumps.map((p) => p.deliverDue()));
        await Promise.all(pumps.map((p) => p.deliverDue()));
        expect([...rx.arrivals].sort()).toEqual(
          Array.from({ length: 10 }, (_, i) => [`/c${i}`, `/c${i}`])
            .flat()
            .sort(),
        );
        for (const r of runs) expect((await callbackOf(one, r)).callback_status_code).toBe(200);
      } finally {
        clocks.forEach((c) => c.restore());
        await two.close();
        await one.close();
        await rx.close();
        rmSync(one.dir, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
