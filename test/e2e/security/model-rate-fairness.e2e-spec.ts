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
import { fakeClock } from '../consent-helpers';

/** 120 a minute: two calls at once, then one each 500 ms of the app's clock. */
const PER_MINUTE = 120;
const TOKEN_MS = 500;
const FLOOD = 6;
const METRICS = { authorization: 'Bearer metrics-operator' };

async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await cond())) await new Promise((r) => setTimeout(r, 10));
}

/**
 * A tenant round: the operator's provider allows so many requests a minute, for every tenant together.
 * Nothing split it: tenant A's flood of runs spent it, and tenant B's message waited behind A's backlog
 * (or got the provider's 429). Now the operator sets `models.openai.requests_per_minute`; calls past it
 * wait on the instance, and each token goes to the waiting tenants in turn: B's first call takes the next
 * token, ahead of every call A had queued. The app's clock is frozen and moved by hand, one token at a time.
 */
describe("security: one tenant's flood of model calls does not spend another tenant's share of the provider's rate", () => {
  let t: TestApp;
  let fake: FakeModelServer;
  let clock: ReturnType<typeof fakeClock>;
  /** Who reached the provider, in order: `A` or `B`. */
  const reached: string[] = [];

  beforeAll(async () => {
    fake = await startFakeModelServer();
    fake.respond((req) => {
      const b = req.system.includes('the agent of B');
      reached.push(b ? 'B' : 'A');
      return { content: b ? 'hello B' : 'flood done' };
    });
    t = await startApp({
      modelBaseUrl: fake.baseUrl,
      overrides: {
        ...TWO_TENANTS,
        models: { openai: { requests_per_minute: PER_MINUTE, max_retries: 0 } },
        observability: { metrics: { token: 'metrics-operator' } },
      },
    });
  });

  afterAll(async () => {
    clock?.restore();
    await t?.close();
    await fake?.close();
  });

  /** Model calls waiting on this instance for the provider's rate, as /metrics tells the operator. */
  const waiting = async (): Promise<number> => {
    const text = (await api(t, 'GET', '/metrics', undefined, METRICS)).body as string;
    return Number(/^agent_model_calls_waiting\{provider="openai"\} (\d+)$/m.exec(text)?.[1] ?? -1);
  };
  const status = async (id: string, key: Record<string, string>) =>
    (await api(t, 'GET', `/v1/runs/${id}`, undefined, key)).body.status as string;

  it("A floods; B's call takes the next token ahead of A's backlog; A's calls then go one per token", async () => {
    const floodAgents: string[] = [];
    for (let i = 0; i < FLOOD; i++)
      floodAgents.push(await createAgent(t, fake, { system: `flood agent ${i}` }, TENANT_A));
    const bAgent = await createAgent(t, fake, { system: 'the agent of B' }, TENANT_B);
    clock = fakeClock(t);

    const floodRuns: string[] = [];
    for (const id of floodAgents) {
      const r = await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('go'), TENANT_A);
      expect(r.status).toBe(202);
      floodRuns.push(r.body.id);
    }
    // the burst went to the provider; the rest of A's calls wait on the instance
    await until(async () => reached.length === 2 && (await waiting()) === FLOOD - 2);
    expect(reached).toEqual(['A', 'A']);

    const b = await api(t, 'POST', `/v1/agents/${bAgent}/messages/async`, say('hi'), TENANT_B);
    expect(b.status).toBe(202);
    await until(async () => (await waiting()) === FLOOD - 1);

    // one token: B's, though four of A's calls were waiting before it
    clock.advance(TOKEN_MS);
    await until(() => reached.length === 3);
    expect(reached).toEqual(['A', 'A', 'B']);
    await until(async () => (await status(b.body.id, TENANT_B)) === 'completed');
    expect(await waiting()).toBe(FLOOD - 2);
    expect(reached).toHaveLength(3);

    // A's backlog goes on at the rate, one call per token, nothing lost
    for (let sent = 3; sent < FLOOD + 1; sent++) {
      clock.advance(TOKEN_MS);
      await until(() => reached.length === sent + 1);
      expect(await waiting()).toBe(FLOOD - sent);
    }
    expect(reached).toEqual(['A', 'A', 'B', ...Array(FLOOD - 2).fill('A')]);
    for (const id of floodRuns)
      await until(async () => (await status(id, TENANT_A)) === 'completed');
  });
});
