import { sseChunk } from '../../support/fake-model-server';
import { api, createAgent, LoopEnv, say, startLoopEnv } from '../../support/processing-fixtures';

/**
 * QA (bounds): what a model endpoint sends was bounded by constants in the code (a tool-call delta's
 * index, an error body read, a Retry-After, usage counts, context retries, metric labels), which an
 * operator could neither see in the config nor change. They are settings now, validated at boot and
 * listed in docs/security.md; each row here sets one low and sends what passes it.
 */
describe('security: what a model endpoint sends is bounded by settings', () => {
  let env: LoopEnv;

  beforeAll(async () => {
    env = await startLoopEnv(['lookup_alpha_long_name', 'lookup_beta', 'lookup_gamma'], {
      overrides: {
        models: {
          max_tool_call_index: 3,
          max_error_body_bytes: 1024,
          max_retry_after_seconds: 0,
          max_usage_tokens: 1_000_000,
          max_context_retries: 0,
        },
        observability: { labels: { max_models: 2, max_tools: 2, max_chars: 20 } },
        limits: { max_tool_calls_per_step: 3 },
      },
    });
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const metrics = async () => (await fetch(`${env.t.baseUrl}/metrics`)).text();
  const send = (agentId: string) => api(env.t, 'POST', `/v1/agents/${agentId}/messages`, say('hi'));

  it('tool and model labels: past max_tools / max_models distinct values <other>, each cut to max_chars', async () => {
    const { t, fake } = env;
    const agentId = await createAgent(t, fake, {
      tools: ['lookup_alpha_long_name', 'lookup_beta', 'lookup_gamma', 'send_message'],
    });
    fake.push(
      {
        tool_calls: ['lookup_alpha_long_name', 'lookup_beta', 'lookup_gamma'].map((name) => ({
          name,
          arguments: { q: 'x', request_heartbeat: true },
        })),
      },
      { content: 'done' },
    );
    expect((await send(agentId)).body.stop_reason.stop_reason).toBe('end_turn');
    for (const model of ['model-b', 'model-c']) {
      const other = await createAgent(t, fake, {
        llm_config: { model, model_endpoint_type: 'openai', model_endpoint: fake.baseUrl },
      });
      expect((await send(other)).status).toBe(200);
    }
    const text = await metrics();
    expect(text).toContain('tool="lookup_alpha_long_na"'); // cut to 20 characters
    expect(text).toContain('tool="lookup_beta"');
    expect(text).toContain('tool="<other>"');
    expect(text).not.toContain('lookup_gamma');
    expect(text).toContain('agent_steps_total{model="openai/fake"}');
    expect(text).toContain('agent_steps_total{model="openai/model-b"}');
    expect(text).toContain('agent_steps_total{model="<other>"}');
    expect(text).not.toContain('model-c');
  });

  it('a streamed tool call at an index past max_tool_call_index fails the run, naming the setting', async () => {
    const { t, fake } = env;
    const agentId = await createAgent(t, fake);
    const call = {
      index: 4,
      id: 'c4',
      type: 'function',
      function: { name: 'send_message', arguments: '{"message":"hi"}' },
    };
    fake.push({ sse: [sseChunk({ tool_calls: [call] }, 'tool_calls')] });
    const res = await fetch(`${t.baseUrl}/v1/agents/${agentId}/messages/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...say('hi'), stream_tokens: true }),
    });
    const frames = (await res.text())
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)));
    expect(frames.find((f) => f.message_type === 'stop_reason')?.stop_reason).toBe(
      'invalid_llm_response',
    );
    const error = frames.find((f) => f.message_type === 'error_message');
    expect(JSON.stringify(error)).toContain('from 0 to 3 expected: models.max_tool_call_index');
  });

  it('an answer asking for more tool calls than limits.max_tool_calls_per_step fails the run; none runs', async () => {
    const { t, fake, tools } = env;
    const agentId = await createAgent(t, fake, { tools: ['lookup_beta'] });
    // each call is run, stored and answered: 3,000 of one scripted turn were a 2.7 MB answer
    fake.push({
      tool_calls: Array.from({ length: 4 }, (_, i) => ({
        name: 'lookup_beta',
        arguments: { q: `x${i}` },
      })),
    });
    const res = await send(agentId);
    expect(res.status).toBe(502);
    expect(res.body.details.stop_reason).toBe('invalid_llm_response');
    expect(res.body.message).toContain(
      '4 tool calls in one step; at most 3 (limits.max_tool_calls_per_step)',
    );
    expect(tools.calls).toEqual([]);
  });

  it("a tenant's model_script turn with more tool calls than the bound is 400 at that turn", async () => {
    const calls = (n: number) =>
      Array.from({ length: n }, () => ({ name: 'lookup_beta', arguments: {} }));
    const res = await api(env.t, 'POST', '/v1/agents/', {
      tools: ['lookup_beta'],
      model_script: [{ tool_calls: calls(3) }, { tool_calls: calls(3_000) }],
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      details: {
        problems: [{ path: 'model_script[1].tool_calls', limit: 'limits.max_tool_calls_per_step' }],
      },
    });
  });

  it('an error answer longer than max_error_body_bytes is not read: its text never reaches the run', async () => {
    const { t, fake } = env;
    const agentId = await createAgent(t, fake);
    fake.push({
      status: 400,
      body: { error: { message: `planted ${'x'.repeat(2000)}`, type: 'invalid_request_error' } },
    });
    const res = await send(agentId);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).not.toContain('planted');
  });

  it('a Retry-After of an hour waits max_retry_after_seconds (0 here), not an hour', async () => {
    const { t, fake } = env;
    const agentId = await createAgent(t, fake);
    fake.push({ status: 429, headers: { 'retry-after': '3600' } }, { content: 'after the wait' });
    const res = await send(agentId);
    expect(res.body.stop_reason.stop_reason).toBe('end_turn');
    expect(fake.requests).toHaveLength(2);
  });

  it('usage counts past max_usage_tokens are cut to it', async () => {
    const { t, fake } = env;
    const agentId = await createAgent(t, fake);
    fake.push({
      content: 'hello',
      usage: { prompt_tokens: 5e9, completion_tokens: 3, total_tokens: 5e9 + 3 },
    });
    const res = await send(agentId);
    expect(res.body.stop_reason.stop_reason).toBe('end_turn');
    const usage = (await api(t, 'GET', `/v1/runs/${res.body.run_id}/usage`)).body;
    expect(usage.prompt_tokens).toBe(1_000_000);
  });

  it('a context the endpoint refuses as too long is tried again max_context_retries times (0: none)', async () => {
    const { t, fake } = env;
    // a history to cut: a smaller context would otherwise be tried again
    const agentId = await createAgent(t, fake, {
      initial_message_sequence: Array.from({ length: 20 }, (_, i) => ({
        role: 'user',
        content: `${i} ${'w '.repeat(200)}`,
      })),
    });
    fake.push({
      status: 400,
      body: { error: { code: 'context_length_exceeded', message: 'maximum context length' } },
    });
    const res = await send(agentId);
    expect(res.status).toBe(400);
    expect(res.body.details.stop_reason).toBe('llm_api_error');
    expect(fake.requests).toHaveLength(1);
  });
});
