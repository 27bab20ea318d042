/* eslint-disable @typescript-eslint/no-explicit-any */
import Letta from '@letta-ai/letta-client';
import { startApp, TestApp } from '../support/app-harness';
import { api, types } from '../support/processing-fixtures';

/** The examples of docs/processing.md (the README's first conversation), run as written. */
describe('readme examples: a first conversation with the scripted model', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  const AGENT = {
    name: 'helper',
    system: 'You are a helpful agent.',
    llm_config: { model: 'scripted', model_endpoint_type: 'scripted', context_window: 8000 },
    tools: ['send_message'],
    include_base_tools: false,
    tool_rules: [{ type: 'continue_loop', tool_name: 'send_message' }],
    // else Letta's base exit_loop rule on send_message would end the batch after its first call
    include_base_tool_rules: false,
    model_script: [
      { tool_calls: [{ name: 'send_message', arguments: { message: 'Looking it up...' } }] },
      { content: 'Here is your answer.' },
    ],
  };

  it('curl: create the agent, send a message, read the answer', async () => {
    const agent = await api(t, 'POST', '/v1/agents/', AGENT);
    expect(agent.status).toBe(200);
    const res = await api(t, 'POST', `/v1/agents/${agent.body.id}/messages`, {
      messages: [{ role: 'user', content: 'find it' }],
    });
    // use_assistant_message (Letta's default): the send_message call is one assistant_message
    expect(types(res.body.messages)).toEqual(['assistant_message', 'assistant_message']);
    expect(res.body.messages[0].content).toBe('Looking it up...');
    expect(res.body.messages[1].content).toBe('Here is your answer.');
    const raw = await api(t, 'POST', `/v1/agents/${agent.body.id}/messages`, {
      messages: [{ role: 'user', content: 'find it' }],
      use_assistant_message: false,
    });
    expect(types(raw.body.messages)).toEqual([
      'tool_call_message',
      'tool_return_message',
      'assistant_message',
    ]);
    expect(res.body.stop_reason).toEqual({ message_type: 'stop_reason', stop_reason: 'end_turn' });
    expect(res.body.usage).toMatchObject({ message_type: 'usage_statistics', step_count: 2 });
    expect(res.body.run_id).toMatch(/^run-/);
  });

  it('SDK: create and stream', async () => {
    const client = new Letta({ baseURL: t.baseUrl, apiKey: 'none', maxRetries: 0 });
    const agent: any = await client.agents.create({ ...AGENT, name: 'helper-sdk' } as any);
    const res: any = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'find it' }],
    });
    expect(res.messages.at(-1).content).toBe('Here is your answer.');
    const seen: string[] = [];
    for await (const chunk of await client.agents.messages.stream(agent.id, {
      messages: [{ role: 'user', content: 'again' }],
    })) {
      seen.push((chunk as any).message_type);
    }
    expect(seen).toEqual([
      'assistant_message',
      'assistant_message',
      'stop_reason',
      'usage_statistics',
    ]);
  });
});
