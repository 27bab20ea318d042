/* eslint-disable @typescript-eslint/no-explicit-any */
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import {
  api,
  createAgent,
  LoopEnv,
  say,
  startLoopEnv,
  TENANT_A,
  TENANT_B,
  TWO_TENANTS,
} from '../support/processing-fixtures';

const A = TENANT_A;
const B = TENANT_B;

/** Letta's step feedback, metrics and traces, the steps list filters, message search dates. */
describe('steps: feedback, metrics, trace, filters', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let agent: string;
  let steps: any[];

  beforeAll(async () => {
    env = await startLoopEnv([], { overrides: TWO_TENANTS });
    ({ t, fake } = env);
    agent = await createAgent(t, fake, { include_base_tools: false }, A);
    for (const text of ['one', 'two']) {
      fake.push({ content: `re: ${text}` });
      await api(t, 'POST', `/v1/agents/${agent}/messages`, say(text), A);
    }
    steps = (await api(t, 'GET', `/v1/steps/?agent_id=${agent}&order=asc`, undefined, A)).body;
  });
  afterAll(() => env.close());

  const list = async (query: string) =>
    (await api(t, 'GET', `/v1/steps/?agent_id=${agent}&${query}`, undefined, A)).body.map(
      (s: any) => s.id,
    );

  it('feedback: set with tags, answered on the step and its list; absent clears it and keeps the tags', async () => {
    expect(steps).toHaveLength(2);
    const [first, second] = steps.map((s) => s.id);
    expect(steps[0]).toMatchObject({ feedback: null, tags: [] });
    const path = `/v1/steps/${first}/feedback`;
    const set = await api(t, 'PATCH', path, { feedback: 'negative', tags: ['wrong', 'wrong'] }, A);
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ id: first, feedback: 'negative', tags: ['wrong'] });
    expect((await api(t, 'GET', `/v1/steps/${first}`, undefined, A)).body.feedback).toBe(
      'negative',
    );
    expect(await list('feedback=negative')).toEqual([first]);
    expect(await list('has_feedback=true')).toEqual([first]);
    expect(await list('has_feedback=false')).toEqual([second]);

    const cleared = await api(t, 'PATCH', path, {}, A);
    expect(cleared.body).toMatchObject({ feedback: null, tags: ['wrong'] });
    expect(await list('has_feedback=true')).toEqual([]);

    for (const bad of [{ feedback: 'meh' }, { tags: 'x' }, { tags: [''] }]) {
      const r = await api(t, 'PATCH', path, bad, A);
      expect(r.status).toBe(400);
    }
    expect((await api(t, 'PATCH', path, { feedback: 'positive' }, B)).status).toBe(404);
    expect((await api(t, 'GET', `/v1/steps/${first}`, undefined, A)).body.feedback).toBeNull();
  });

  it('metrics: the model call timing, nulls for what is not recorded; trace: null; run trace: 501', async () => {
    const step = steps[0];
    const m = await api(t, 'GET', `/v1/steps/${step.id}/metrics`, undefined, A);
    expect(m.status).toBe(200);
    expect(m.body).toEqual({
      id: step.id,
      agent_id: agent,
      run_id: step.run_id,
      provider_id: null,
      project_id: null,
      template_id: null,
      base_template_id: null,
      step_start_ns: null,
      step_ns: null,
      llm_request_start_ns: expect.any(Number),
      llm_request_ns: expect.any(Number),
      tool_execution_ns: null,
    });
    expect(m.body.llm_request_start_ns / 1e6).toBeLessThanOrEqual(Date.parse(step.created_at));
    expect((await api(t, 'GET', `/v1/steps/${step.id}/metrics`, undefined, B)).status).toBe(404);

    const trace = await api(t, 'GET', `/v1/steps/${step.id}/trace`, undefined, A);
    expect(trace.status).toBe(200);
    expect(trace.body).toBeNull();
    expect((await api(t, 'GET', `/v1/steps/${step.id}/trace`, undefined, B)).status).toBe(404);

    const run = await api(t, 'GET', `/v1/runs/${step.run_id}/trace`, undefined, A);
    expect(run.status).toBe(501);
    expect(run.body.code).toBe('TRACES_NOT_STORED');
    expect((await api(t, 'GET', `/v1/runs/${step.run_id}/trace`, undefined, B)).status).toBe(404);
  });

  it('list filters: model, start_date / end_date (exclusive), trace_ids and project_id match nothing', async () => {
    const [first, second] = steps.map((s) => s.id);
    expect(await list(`model=${steps[0].model}`)).toEqual([second, first]);
    expect(await list('model=another-model')).toEqual([]);
    expect(await list(`start_date=${encodeURIComponent(steps[0].created_at)}&order=asc`)).toEqual(
      steps[1].created_at > steps[0].created_at ? [second] : [],
    );
    expect(await list(`end_date=${encodeURIComponent(steps[1].created_at)}&order=asc`)).toEqual(
      steps[1].created_at > steps[0].created_at ? [first] : [],
    );
    expect(await list('start_date=2000-01-01&end_date=2999-01-01&order=asc')).toEqual([
      first,
      second,
    ]);
    expect(await list('trace_ids=abc')).toEqual([]);
    expect(await list('project_id=proj-1')).toEqual([]);
    expect(await list('tags=x&order=asc')).toEqual([first, second]);
    for (const bad of [
      'start_date=soon',
      'start_date=2999-01-01&end_date=2000-01-01',
      'has_feedback=maybe',
    ]) {
      const r = await api(t, 'GET', `/v1/steps/?${bad}`, undefined, A);
      expect(r.status).toBe(400);
    }
  });

  it('message search: start_date (after) and end_date (on or before)', async () => {
    const search = async (extra: Record<string, unknown>) =>
      (
        await api(t, 'POST', '/v1/messages/search', { query: 're:', agent_id: agent, ...extra }, A)
      ).body.map((h: any) => h.content);
    const all = await search({});
    expect(all.sort()).toEqual(['re: one', 're: two']);
    expect(await search({ start_date: '2999-01-01T00:00:00Z' })).toEqual([]);
    expect(await search({ end_date: '2000-01-01T00:00:00Z' })).toEqual([]);
    const hits = (
      await api(t, 'POST', '/v1/messages/search', { query: 're: two', agent_id: agent }, A)
    ).body;
    expect(await search({ end_date: hits[0].created_at })).toContain('re: two');
    expect(await search({ start_date: hits[0].created_at })).not.toContain('re: two');
    const bad = await api(t, 'POST', '/v1/messages/search', { query: 'x', end_date: 'later' }, A);
    expect(bad.status).toBe(400);
  });
});
