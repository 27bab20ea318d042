/* eslint-disable @typescript-eslint/no-explicit-any */
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import { ModelsService } from '../../src/models/models.service';
import type { ModelRequest } from '../../src/models/model-provider';
import { api, createAgent, LoopEnv, say, startLoopEnv } from '../support/processing-fixtures';
import { fakeClock } from './consent-helpers';

/** Budgets per agent and per request (request, else agent, else config), through the fake model server. */
describe('processing: budgets per agent and per request', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;

  beforeAll(async () => {
    // a config token budget, so the precedence over it shows
    env = await startLoopEnv(['lookup'], {
      overrides: { processing: { max_tokens_per_batch: 1000 } },
    });
    ({ t, fake } = env);
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  /** An agent that loops on `lookup` until a budget stops it. */
  const looping = (over: Record<string, unknown> = {}) =>
    createAgent(t, fake, {
      tools: ['lookup'],
      tool_rules: [{ type: 'continue_loop', tool_name: 'lookup' }],
      include_base_tools: false,
      ...over,
    });
  const hundredTokensPerCall = () =>
    fake.respond(() => ({
      tool_calls: [{ name: 'lookup', arguments: {} }],
      usage: { prompt_tokens: 90, completion_tokens: 10, total_tokens: 100 },
    }));
  const send = async (agentId: string, extra: Record<string, unknown> = {}) => {
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say('go', extra));
    expect(res.status).toBe(200);
    return res.body;
  };
  const runOf = async (runId: string) => (await api(t, 'GET', `/v1/runs/${runId}`)).body;

  describe('tokens per batch', () => {
    it('the agent budget applies over the config', async () => {
      const id = await looping({ budgets: { max_tokens_per_batch: 250 } });
      hundredTokensPerCall();
      const res = await send(id);
      expect(res.stop_reason.stop_reason).toBe('max_tokens_exceeded');
      expect(fake.requests).toHaveLength(3);
      expect(res.usage.total_tokens).toBe(300);
      const run = await runOf(res.run_id);
      expect(run).toMatchObject({ status: 'failed', stop_reason: 'max_tokens_exceeded' });
      expect(run.error).toBe('token budget of 250 per batch reached (300 used)');
    });

    it('the request budget applies over the agent', async () => {
      const id = await looping({ budgets: { max_tokens_per_batch: 250 } });
      hundredTokensPerCall();
      const res = await send(id, { max_tokens_per_batch: 150 });
      expect(res.stop_reason.stop_reason).toBe('max_tokens_exceeded');
      expect(fake.requests).toHaveLength(2);
      expect((await runOf(res.run_id)).request_config).toMatchObject({
        max_steps: null,
        max_tokens_per_batch: 150,
      });
    });

    it('without agent or request budgets the config applies', async () => {
      const id = await looping();
      hundredTokensPerCall();
      const res = await send(id);
      expect(res.stop_reason.stop_reason).toBe('max_tokens_exceeded');
      expect(fake.requests).toHaveLength(10);
    });

    it('a total below its parts counts as their sum (900 + 900 with total 0 is 1800)', async () => {
      const id = await looping();
      fake.respond(() => ({
        tool_calls: [{ name: 'lookup', arguments: {} }],
        usage: { prompt_tokens: 900, completion_tokens: 900, total_tokens: 0 },
      }));
      const res = await send(id);
      expect(res.stop_reason.stop_reason).toBe('max_tokens_exceeded');
      expect(fake.requests).toHaveLength(1);
      expect(res.usage.total_tokens).toBe(1800);
    });

    it('negative counts are estimated, so they cannot hold the budget back', async () => {
      const id = await looping({ budgets: { max_tokens_per_batch: 150 } });
      fake.respond(() => ({
        tool_calls: [{ name: 'lookup', arguments: {} }],
        usage: { prompt_tokens: -1_000_000, completion_tokens: -5, total_tokens: -1_000_005 },
      }));
      const res = await send(id);
      expect(res.stop_reason.stop_reason).toBe('max_tokens_exceeded');
      expect(fake.requests.length).toBeLessThan(10);
      expect(res.usage.total_tokens).toBeGreaterThanOrEqual(150);
      expect(res.usage.prompt_tokens).toBeGreaterThan(0);
      expect(res.usage.completion_tokens).toBeGreaterThan(0);
    });

    it('a batch that ends within its budget ends normally', async () => {
      const id = await looping({ budgets: { max_tokens_per_batch: 250 } });
      fake.push(
        { tool_calls: [{ name: 'lookup', arguments: {} }], usage: { total_tokens: 100 } },
        { content: 'done', usage: { total_tokens: 100 } },
      );
      expect((await send(id)).stop_reason.stop_reason).toBe('end_turn');
    });
  });

  describe('max_steps', () => {
    it('the agent value applies; the request value applies over it', async () => {
      const id = await looping({ max_steps: 2 });
      fake.respond(() => ({ tool_calls: [{ name: 'lookup', arguments: {} }] }));
      const byAgent = await send(id);
      expect(byAgent.stop_reason.stop_reason).toBe('max_steps');
      expect(byAgent.usage.step_count).toBe(2);

      const byRequest = await send(id, { max_steps: 4 });
      expect(byRequest.stop_reason.stop_reason).toBe('max_steps');
      expect(byRequest.usage.step_count).toBe(4);
    });
  });

  describe('wall time per batch (driven by the app CLOCK, no real waiting)', () => {
    let clock: ReturnType<typeof fakeClock>;
    beforeEach(() => {
      clock = fakeClock(t);
    });
    afterEach(() => clock.restore());

    /** Every model call "takes" 31 s of the app's clock. */
    const slowModel = () =>
      fake.respond(() => {
        clock.advance(31_000);
        return { tool_calls: [{ name: 'lookup', arguments: {} }] };
      });

    it('the agent budget ends the batch with max_wall_time before the next model call', async () => {
      const id = await looping({ budgets: { max_batch_seconds: 30 } });
      slowModel();
      const res = await send(id);
      expect(res.stop_reason.stop_reason).toBe('max_wall_time');
      expect(fake.requests).toHaveLength(1);
      // the call that ran over still has its result stored: the history stays valid
      expect(res.messages.map((m: any) => m.message_type)).toEqual([
        'tool_call_message',
        'tool_return_message',
      ]);
      const run = await runOf(res.run_id);
      expect(run).toMatchObject({ status: 'failed', stop_reason: 'max_wall_time' });
      expect(run.error).toBe('wall time budget of 30 s per batch reached');
    });

    it('the request budget applies over the agent', async () => {
      const id = await looping({ budgets: { max_batch_seconds: 30 } });
      slowModel();
      const res = await send(id, { max_batch_seconds: 60 });
      expect(res.stop_reason.stop_reason).toBe('max_wall_time');
      expect(fake.requests).toHaveLength(2);
    });
  });

  describe('per-model-call timeout', () => {
    it('the request value, else the agent value, reaches the provider; else its configured default', async () => {
      const models = t.app.get(ModelsService);
      const provider = models.providerFor(
        { model: 'fake', model_endpoint_type: 'openai' },
        'default',
      );
      const spy = jest.spyOn(provider, 'complete');
      try {
        const id = await looping({ budgets: { model_call_timeout_seconds: 20 } });
        fake.push({ content: 'a' }, { content: 'b' });
        await send(id);
        await send(id, { model_call_timeout_seconds: 5 });
        const plain = await looping();
        fake.push({ content: 'c' });
        await send(plain);
        const timeouts = spy.mock.calls.map(([req]: [ModelRequest]) => req.timeoutMs);
        expect(timeouts).toEqual([20_000, 5_000, undefined]);
      } finally {
        spy.mockRestore();
      }
    });
  });

  describe('the agent field', () => {
    it('is returned, replaced by an update, cleared by null, and validated with paths', async () => {
      const id = await looping({ budgets: { max_tokens_per_batch: 250 } });
      const none = {
        max_tokens_per_batch: null,
        max_batch_seconds: null,
        model_call_timeout_seconds: null,
      };
      expect((await api(t, 'GET', `/v1/agents/${id}`)).body.budgets).toEqual({
        ...none,
        max_tokens_per_batch: 250,
      });
      const patched = await api(t, 'PATCH', `/v1/agents/${id}`, {
        budgets: { max_batch_seconds: 45, model_call_timeout_seconds: 10 },
      });
      expect(patched.body.budgets).toEqual({
        ...none,
        max_batch_seconds: 45,
        model_call_timeout_seconds: 10,
      });
      const cleared = await api(t, 'PATCH', `/v1/agents/${id}`, { budgets: null });
      expect(cleared.body.budgets).toEqual(none);

      const bad = await api(t, 'PATCH', `/v1/agents/${id}`, {
        budgets: { max_tokens_per_batch: -1, tokens: 5 },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.details.problems.map((p: any) => p.path).sort()).toEqual([
        'budgets.max_tokens_per_batch',
        'budgets.tokens',
      ]);
    });

    it('a bad request budget is a 400 before anything is stored', async () => {
      const id = await looping();
      const res = await api(
        t,
        'POST',
        `/v1/agents/${id}/messages`,
        say('go', { max_batch_seconds: 0 }),
      );
      expect(res.status).toBe(400);
      expect(res.body.details.problems[0].path).toBe('max_batch_seconds');
      expect((await api(t, 'GET', `/v1/runs/?agent_id=${id}`)).body).toEqual([]);
    });
  });
});
