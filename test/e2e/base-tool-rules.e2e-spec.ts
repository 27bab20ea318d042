/* eslint-disable @typescript-eslint/no-explicit-any */
import Letta from '@letta-ai/letta-client';
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import { LoopEnv, startLoopEnv } from '../support/processing-fixtures';

/** Letta's base tool rules, added on create (agent_manager.create_agent_async), through the Letta SDK. */
describe('base tool rules (Letta SDK)', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let client: Letta;

  beforeAll(async () => {
    env = await startLoopEnv(['lookup']);
    ({ t, fake } = env);
    client = new Letta({ baseURL: t.baseUrl, apiKey: 'x', maxRetries: 0 });
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const create = async (over: Record<string, unknown> = {}) =>
    (await client.agents.create({
      name: `base-rules-${Math.random().toString(36).slice(2)}`,
      llm_config: {
        model: 'fake',
        model_endpoint_type: 'openai',
        model_endpoint: fake.baseUrl,
        context_window: 8000,
      },
      memory_blocks: [{ label: 'human', value: '' }],
      ...over,
    } as never)) as any;
  const rulesOf = async (id: string) => (await client.agents.retrieve(id)).tool_rules as any[];

  const MEMGPT_RULES = [
    { type: 'exit_loop', tool_name: 'send_message' },
    { type: 'continue_loop', tool_name: 'core_memory_append' },
    { type: 'continue_loop', tool_name: 'core_memory_replace' },
    { type: 'continue_loop', tool_name: 'conversation_search' },
  ];

  it('a default (memgpt_agent) agent: exit_loop for send_message, continue_loop for its memory tools', async () => {
    const agent = await create();
    expect(agent.agent_type).toBe('memgpt_agent');
    expect(agent.tool_rules).toEqual(MEMGPT_RULES);
    expect(await rulesOf(agent.id)).toEqual(MEMGPT_RULES);
    const listed: any[] = (await client.agents.list({ name: agent.name })).getPaginatedItems();
    expect(listed[0].tool_rules).toEqual(MEMGPT_RULES);
  });

  it("a memgpt agent's core_memory_append without request_heartbeat goes on to the answer (as in Letta)", async () => {
    const agent = await create();
    fake.push(
      {
        tool_calls: [{ name: 'core_memory_append', arguments: { label: 'human', content: 'Ann' } }],
      },
      { tool_calls: [{ name: 'send_message', arguments: { message: 'Noted, Ann.' } }] },
    );
    const res: any = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'I am Ann' }],
    });
    expect(fake.requests).toHaveLength(2);
    // it ran (no self-correction): the rule, not an error, went on
    expect((await client.agents.blocks.retrieve('human', { agent_id: agent.id })).value).toBe(
      'Ann',
    );
    expect(res.messages.at(-1)).toMatchObject({
      message_type: 'assistant_message',
      content: 'Noted, Ann.',
    });
    expect(res.stop_reason.stop_reason).toBe('end_turn');
    // send_message is terminal: the model is not offered request_heartbeat on it
    const sendSchema = fake.requests[0].tools.find((x: any) => x.function.name === 'send_message');
    expect(sendSchema.function.parameters.properties.request_heartbeat).toBeUndefined();
  });

  it('include_base_tool_rules: false adds none, and the memory call ends the turn', async () => {
    const agent = await create({ include_base_tool_rules: false });
    expect(agent.tool_rules).toEqual([]);
    fake.push({
      tool_calls: [{ name: 'core_memory_append', arguments: { label: 'human', content: 'Ann' } }],
    });
    const res: any = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'I am Ann' }],
    });
    expect(fake.requests).toHaveLength(1);
    expect(res.stop_reason.stop_reason).toBe('end_turn');
    expect((await client.agents.blocks.retrieve('human', { agent_id: agent.id })).value).toBe(
      'Ann',
    );
  });

  it('a letta_v1_agent with no tool_rules gets none', async () => {
    const agent = await create({ agent_type: 'letta_v1_agent' });
    expect(agent.tool_rules).toEqual([]);
  });

  it('a letta_v1_agent given some tool_rules gets the base rules after them', async () => {
    const agent = await create({
      agent_type: 'letta_v1_agent',
      tools: ['lookup'],
      tool_rules: [{ type: 'exit_loop', tool_name: 'lookup' }],
    });
    expect(agent.tool_rules).toEqual([
      { type: 'exit_loop', tool_name: 'lookup' },
      { type: 'continue_loop', tool_name: 'memory_replace' },
      { type: 'continue_loop', tool_name: 'memory_insert' },
      { type: 'continue_loop', tool_name: 'conversation_search' },
    ]);
  });

  it("a tool whose loop the request's own rules decide keeps that choice: no base rule is added for it", async () => {
    const agent = await create({
      tool_rules: [{ type: 'continue_loop', tool_name: 'send_message' }],
    });
    expect(agent.tool_rules).toContainEqual({ type: 'continue_loop', tool_name: 'send_message' });
    expect(agent.tool_rules).not.toContainEqual({ type: 'exit_loop', tool_name: 'send_message' });
    expect(agent.tool_rules).toContainEqual({
      type: 'continue_loop',
      tool_name: 'core_memory_append',
    });
  });

  it('include_base_tool_rules that is not a boolean is a 400 at the field', async () => {
    const err: any = await create({ include_base_tool_rules: 'yes' }).catch((e) => e);
    expect(err.status).toBe(400);
    expect(JSON.stringify(err.error)).toContain('include_base_tool_rules');
  });
});
