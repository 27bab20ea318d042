/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { startApp, TestApp } from '../../support/app-harness';
import { api } from '../consent-helpers';

/**
 * QA: `llm_config.context_window`, `max_tokens` and `temperature` were only type-checked, so
 * `context_window: 1e308` and `max_tokens: -7` were stored and reached the model call. They now have the
 * ranges of their Letta 1.x counterparts (`context_window_limit`, `model_settings`): whole numbers from 1 to
 * 10,000,000 for the first two, 0 to 2 for the temperature; an agent file's import takes the same path.
 */
describe('security: bounded llm_config numbers', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  const hostile: [string, Record<string, unknown>][] = [
    ['context_window', { context_window: 1e308 }],
    ['context_window', { context_window: 0 }],
    ['context_window', { context_window: 128_000.5 }],
    ['max_tokens', { max_tokens: -7 }],
    ['max_tokens', { max_tokens: 0 }],
    ['max_tokens', { max_tokens: 1e308 }],
    ['temperature', { temperature: 1e308 }],
    ['temperature', { temperature: -1 }],
  ];
  const expectInvalidAt = (res: { status: number; body: any }, field: string) => {
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.details.problems.map((p: any) => p.path)).toContainEqual(
      expect.stringMatching(new RegExp(`llm_config\\.${field}$`)),
    );
  };

  it.each(hostile)(
    'a tenant creates or changes an agent with %s %j → 400 at the field',
    async (field, llm) => {
      expectInvalidAt(await api(t, 'POST', '/v1/agents/', { llm_config: llm }), field);
      const agent = (await api(t, 'POST', '/v1/agents/', {})).body;
      expectInvalidAt(await api(t, 'PATCH', `/v1/agents/${agent.id}`, { llm_config: llm }), field);
      const after = (await api(t, 'GET', `/v1/agents/${agent.id}`)).body.llm_config;
      expect(after[field]).toEqual(agent.llm_config[field]);
    },
  );

  it('the bounds themselves are accepted (and max_tokens may be null)', async () => {
    const llm = { context_window: 10_000_000, max_tokens: 10_000_000, temperature: 2 };
    const res = await api(t, 'POST', '/v1/agents/', { model: 'scripted/default', llm_config: llm });
    expect(res.status).toBe(200);
    expect(res.body.llm_config).toMatchObject(llm);
    const low = { context_window: 1, max_tokens: null, temperature: 0 };
    expect((await api(t, 'PATCH', `/v1/agents/${res.body.id}`, { llm_config: low })).status).toBe(
      200,
    );
  });

  it('an agent file carrying context_window 1e308 and max_tokens -7 → 400, no agent imported', async () => {
    const agent = (await api(t, 'POST', '/v1/agents/', { name: 'to-export' })).body;
    const file = (await api(t, 'GET', `/v1/agents/${agent.id}/export`)).body;
    file.agents[0].llm_config = {
      ...file.agents[0].llm_config,
      context_window: 1e308,
      max_tokens: -7,
    };
    file.agents[0].name = 'imported-hostile';
    const form = new FormData();
    form.append('file', new Blob([JSON.stringify(file)], { type: 'application/json' }), 'a.af');
    const res = await fetch(`${t.baseUrl}/v1/agents/import`, { method: 'POST', body: form });
    const body = (await res.json()) as any;
    expectInvalidAt({ status: res.status, body }, 'context_window');
    expectInvalidAt({ status: res.status, body }, 'max_tokens');
    const names = (await api(t, 'GET', '/v1/agents/?limit=100')).body.map((a: any) => a.name);
    expect(names).not.toContain('imported-hostile');
  });
});
