/* eslint-disable @typescript-eslint/no-explicit-any */
import { startApp, TestApp } from '../../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../../support/fake-model-server';
import {
  api,
  createAgent,
  say,
  TENANT_A,
  TENANT_B,
  TWO_TENANTS,
} from '../../support/processing-fixtures';

/** The provider's concurrency: a request past it is answered 429, as a provider's rate limit does. */
const PROVIDER_CONCURRENCY = 3;
const FLOOD = 8;

async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await cond())) await new Promise((r) => setTimeout(r, 10));
}

/**
 * A tenant round: tenant A started runs on many agents at once, and every one of them called the model at
 * the same moment, through the operator's provider key. The provider's limit was all A's: B's single
 * message got the provider's 429 and failed (`llm_api_error`), and so did A's runs past the limit. Now at
 * most `quotas.running_runs` of a tenant's runs process at once (per instance); the rest wait, stored
 * (`created`) and in order, and start as A's own runs end. B's run starts at once beside them.
 */
describe("security: one tenant's flood of runs does not starve another tenant's", () => {
  let t: TestApp;
  let fake: FakeModelServer;
  /** A's model calls in the order they reached the provider, each held until the test answers it. */
  const arrived: number[] = [];
  const held = new Map<number, () => void>();
  let answered429 = 0;
  let inFlight = 0;

  beforeAll(async () => {
    fake = await startFakeModelServer();
    fake.respond(async (req) => {
      if (inFlight >= PROVIDER_CONCURRENCY) {
        answered429++;
        return {
          status: 429,
          body: { error: { message: 'Rate limit reached', type: 'requests' } },
        };
      }
      const flood = /flood agent (\d+)/.exec(req.system);
      if (!flood) return { content: 'hello B' };
      inFlight++;
      arrived.push(Number(flood[1]));
      await new Promise<void>((go) => held.set(Number(flood[1]), go));
      inFlight--;
      return { content: 'flood done' };
    });
    t = await startApp({
      modelBaseUrl: fake.baseUrl,
      overrides: {
        ...TWO_TENANTS,
        quotas: { running_runs: 2 },
        // no retry: the provider's 429 ends the run, as a busy provider does once retries are spent
        models: { openai: { max_retries: 0 } },
      },
    });
  });

  afterAll(async () => {
    for (const go of held.values()) go();
    await t?.close();
    await fake?.close();
  });

  const run = async (id: string) =>
    (await api(t, 'GET', `/v1/runs/${id}`, undefined, TENANT_A)).body;
  const statuses = async (ids: string[]) =>
    (await Promise.all(ids.map(run))).map((r) => r.status as string);

  it("B's message completes while A's flood waits its turn; then every run of A completes, in the order stored", async () => {
    const floodAgents: string[] = [];
    for (let i = 0; i < FLOOD; i++)
      floodAgents.push(await createAgent(t, fake, { system: `flood agent ${i}` }, TENANT_A));
    const bAgent = await createAgent(t, fake, { system: 'the agent of B' }, TENANT_B);

    const floodRuns: string[] = [];
    for (const id of floodAgents) {
      const r = await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('go'), TENANT_A);
      expect(r.status).toBe(202);
      floodRuns.push(r.body.id);
    }
    // A holds its two slots: two calls at the provider, the other runs stored and waiting
    await until(() => arrived.length >= 2);
    const waiting = await statuses(floodRuns);
    expect(waiting.filter((s) => s === 'running')).toHaveLength(2);
    expect(waiting.filter((s) => s === 'created')).toHaveLength(FLOOD - 2);

    const b = await api(t, 'POST', `/v1/agents/${bAgent}/messages`, say('hi'), TENANT_B);
    expect(b.status).toBe(200);
    expect(b.body.stop_reason.stop_reason).toBe('end_turn');
    const said = b.body.messages.find((m: any) => m.message_type === 'assistant_message');
    expect(said.content).toBe('hello B');
    // B finished while A's flood was still under way: not behind it
    expect([...arrived].sort()).toEqual([0, 1]);
    expect((await statuses(floodRuns)).filter((s) => s === 'created')).toHaveLength(FLOOD - 2);

    // A's calls answered one at a time: each frees one slot, which the oldest waiting run takes
    for (let i = 0; i < FLOOD; i++) {
      held.get(i)!();
      await until(() => arrived.length >= Math.min(i + 3, FLOOD));
    }
    for (const id of floodRuns)
      await until(async () =>
        ['completed', 'failed', 'cancelled'].includes((await run(id)).status),
      );
    // the first two started together; every later one in the order it was stored
    expect(arrived.slice(2)).toEqual(floodAgents.slice(2).map((_, i) => i + 2));
    const ended = await Promise.all(floodRuns.map(run));
    expect(ended.map((r) => [r.status, r.stop_reason])).toEqual(
      floodRuns.map(() => ['completed', 'end_turn']),
    );
    expect(answered429).toBe(0);
  });
});
