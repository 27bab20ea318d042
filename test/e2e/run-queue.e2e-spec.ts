/* eslint-disable @typescript-eslint/no-explicit-any */
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import { api, createAgent, LoopEnv, say, startLoopEnv } from '../support/processing-fixtures';

/**
 * Messages wait in order behind an agent's running batch, at most `processing.max_queued_runs` of them
 * (here 2): one more is 429 RUN_QUEUE_FULL, and nothing of it is stored. Only the next queued run is kept
 * in memory as stored; the ones behind it are read back when their turn comes, with their whole request.
 */
describe('the queue of messages behind a running batch', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;

  beforeAll(async () => {
    env = await startLoopEnv([], { overrides: { processing: { max_queued_runs: 2 } } });
    ({ t, fake } = env);
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const status = async (runId: string) =>
    (await api(t, 'GET', `/v1/runs/${runId}`)).body.status as string;

  it('takes max_queued_runs messages behind the running batch, refuses one more with 429, then runs them in order', async () => {
    const id = await createAgent(t, fake, { include_base_tools: false });
    const long = 'q'.repeat(50_000);
    fake.push(
      { content: 'first done', delayMs: 1500 },
      { content: 'second done' },
      { content: 'third done' },
    );
    const first = await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('first'));
    expect(first.status).toBe(202);
    await fake.waitForRequests(1);
    const second = await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('second'));
    const third = await api(t, 'POST', `/v1/agents/${id}/messages/async`, say(`third ${long}`));
    expect([second.status, third.status]).toEqual([202, 202]);

    const refused = await api(t, 'POST', `/v1/agents/${id}/messages`, say('fourth'));
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({
      code: 'RUN_QUEUE_FULL',
      details: { max_queued_runs: 2, queued: 2 },
    });

    for (const run of [first, second, third])
      while (!['completed', 'failed', 'cancelled'].includes(await status(run.body.id)))
        await new Promise((r) => setTimeout(r, 20));
    expect(await Promise.all([first, second, third].map((r) => status(r.body.id)))).toEqual([
      'completed',
      'completed',
      'completed',
    ]);
    // in order, each with its whole request (the third was read back from the database)
    const prompts = fake.requests.map((r) => JSON.stringify(r.messages));
    expect(prompts).toHaveLength(3);
    expect(prompts[1]).toContain('second');
    expect(prompts[1]).not.toContain('third');
    expect(prompts[2]).toContain(`third ${long}`);
    const history = await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&limit=100`);
    const texts = (history.body as any[]).map((m) => m.content);
    expect(texts).not.toContain('fourth');

    // the queue has room again
    fake.push({ content: 'fifth done' });
    expect((await api(t, 'POST', `/v1/agents/${id}/messages`, say('fifth'))).status).toBe(200);
  });

  it('concurrent sends behind a running batch: each is counted before any is stored, never past the bound', async () => {
    const id = await createAgent(t, fake, { include_base_tools: false });
    fake.push({ content: 'busy', delayMs: 1500 });
    const first = await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('busy'));
    await fake.waitForRequests(1);
    for (let i = 0; i < 4; i++) fake.push({ content: `done ${i}` });
    const burst = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        api(t, 'POST', `/v1/agents/${id}/messages/async`, say(`burst ${i}`)),
      ),
    );
    const accepted = burst.filter((r) => r.status === 202);
    expect(accepted).toHaveLength(2);
    expect(burst.filter((r) => r.status === 429)).toHaveLength(10);
    for (const run of [first, ...accepted])
      while (!['completed', 'failed', 'cancelled'].includes(await status(run.body.id)))
        await new Promise((r) => setTimeout(r, 20));
  });
});
