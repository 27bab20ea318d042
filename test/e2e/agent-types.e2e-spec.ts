/* eslint-disable @typescript-eslint/no-explicit-any */
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import {
  api,
  createAgent,
  LoopEnv,
  say,
  startLoopEnv,
  types,
} from '../support/processing-fixtures';

/** Letta's agent_type: base tools per type, the v1 loop (no heartbeats), memory_insert / memory_replace. */
describe('agent types', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;

  beforeAll(async () => {
    env = await startLoopEnv(['lookup']);
    ({ t, fake } = env);
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const agentOf = async (over: Record<string, unknown>) =>
    (await api(t, 'GET', `/v1/agents/${await createAgent(t, fake, over)}`)).body;
  const send = async (agentId: string, text = 'go') => {
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say(text));
    expect(res.status).toBe(200);
    return res.body;
  };
  const toolNames = (agent: any) => agent.tools.map((x: any) => x.name);
  const hasHeartbeat = (req: any) =>
    req.tools.some((x: any) => 'request_heartbeat' in x.function.parameters.properties);

  it.each([
    [
      undefined,
      ['send_message', 'core_memory_append', 'core_memory_replace', 'conversation_search'],
    ],
    [
      'memgpt_agent',
      ['send_message', 'core_memory_append', 'core_memory_replace', 'conversation_search'],
    ],
    ['memgpt_v2_agent', ['send_message', 'memory_replace', 'memory_insert', 'conversation_search']],
    ['letta_v1_agent', ['memory_replace', 'memory_insert', 'conversation_search']],
    ['react_agent', []],
    ['workflow_agent', []],
  ])('agent_type %s: its base tools, answered and stored as created', async (type, base) => {
    const a = await agentOf(type ? { agent_type: type } : {});
    expect(a.agent_type).toBe(type ?? 'memgpt_agent');
    expect(toolNames(a)).toEqual(base);
    const listed = await api(t, 'GET', `/v1/agents/${a.id}/tools`);
    expect(listed.body.map((x: any) => x.name).sort()).toEqual([...base].sort());
  });

  it('a type this server does not run, or an unknown one, is 400 naming the supported types', async () => {
    for (const agent_type of ['sleeptime_agent', 'voice_convo_agent', 'nonsense', 7]) {
      const res = await api(t, 'POST', '/v1/agents/', { name: 'x', agent_type });
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body)).toContain(
        'memgpt_agent, memgpt_v2_agent, letta_v1_agent, react_agent, workflow_agent',
      );
    }
  });

  it('agent_type is fixed once created (Letta UpdateAgent has none): the same one is accepted', async () => {
    const a = await agentOf({ agent_type: 'letta_v1_agent' });
    const same = await api(t, 'PATCH', `/v1/agents/${a.id}`, {
      agent_type: 'letta_v1_agent',
      description: 'd',
    });
    expect(same.status).toBe(200);
    const other = await api(t, 'PATCH', `/v1/agents/${a.id}`, { agent_type: 'memgpt_agent' });
    expect(other.status).toBe(400);
    expect(JSON.stringify(other.body)).toContain('cannot be changed');
    expect((await api(t, 'GET', `/v1/agents/${a.id}`)).body.agent_type).toBe('letta_v1_agent');
  });

  it('letta_v1_agent: a tool call, then the text answer, in one request ending end_turn; no heartbeat offered', async () => {
    const a = await agentOf({ agent_type: 'letta_v1_agent', tools: ['lookup'] });
    fake.push(
      { tool_calls: [{ name: 'lookup', arguments: { q: 'x' } }] },
      { content: 'the answer' },
    );
    const res = await send(a.id);
    expect(types(res.messages)).toEqual([
      'tool_call_message',
      'tool_return_message',
      'assistant_message',
    ]);
    expect(res.messages[2].content).toBe('the answer');
    expect(res.stop_reason.stop_reason).toBe('end_turn');
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests.some(hasHeartbeat)).toBe(false);
    expect(fake.requests[0].toolNames).not.toContain('send_message');
  });

  it('memgpt_agent (the default) is unchanged: request_heartbeat offered, a call without it ends the batch', async () => {
    const a = await agentOf({ tools: ['lookup'] });
    fake.push({ tool_calls: [{ name: 'lookup', arguments: { q: 'x' } }] });
    const res = await send(a.id);
    expect(types(res.messages)).toEqual(['tool_call_message', 'tool_return_message']);
    expect(fake.requests).toHaveLength(1);
    expect(hasHeartbeat(fake.requests[0])).toBe(true);
  });

  it('letta_v1_agent: rules still apply (exit_loop ends the batch after the call)', async () => {
    const a = await agentOf({
      agent_type: 'letta_v1_agent',
      tools: ['lookup'],
      tool_rules: [{ type: 'exit_loop', tool_name: 'lookup' }],
    });
    fake.push({ tool_calls: [{ name: 'lookup', arguments: { q: 'x' } }] });
    const res = await send(a.id);
    expect(res.stop_reason.stop_reason).toBe('tool_rule');
    expect(fake.requests).toHaveLength(1);
  });

  it('letta_v1_agent: a client tool parks the batch; its ToolReturn continues it to the text answer', async () => {
    const a = await agentOf({ agent_type: 'letta_v1_agent', include_base_tools: false });
    const BASH = {
      name: 'Bash',
      description: 'Runs a command on the client',
      parameters: { type: 'object', properties: { command: { type: 'string' } } },
    };
    fake.push(
      { tool_calls: [{ id: 'call_1', name: 'Bash', arguments: { command: 'ls' } }] },
      { content: 'two files' },
    );
    const first = await api(
      t,
      'POST',
      `/v1/agents/${a.id}/messages`,
      say('list', { client_tools: [BASH] }),
    );
    expect(first.body.stop_reason.stop_reason).toBe('requires_approval');
    expect(hasHeartbeat(fake.requests[0])).toBe(false);
    const second = await api(t, 'POST', `/v1/agents/${a.id}/messages`, {
      messages: [
        {
          type: 'approval',
          approvals: [
            { type: 'tool', tool_call_id: 'call_1', tool_return: 'a b', status: 'success' },
          ],
        },
      ],
      client_tools: [BASH],
    });
    expect(types(second.body.messages).slice(-2)).toEqual([
      'tool_return_message',
      'assistant_message',
    ]);
    expect(second.body.stop_reason.stop_reason).toBe('end_turn');
  });

  it('memory_replace and memory_insert edit blocks with Letta texts; read-only blocks refuse', async () => {
    const a = await agentOf({
      agent_type: 'letta_v1_agent',
      memory_blocks: [
        { label: 'human', value: 'Name: Ann\nLikes tea\nLikes tea', limit: 200 },
        { label: 'persona', value: 'fixed', limit: 200, read_only: true },
      ],
    });
    fake.push(
      {
        tool_calls: [
          {
            name: 'memory_replace',
            arguments: { label: 'human', old_string: 'Bob', new_string: 'x' },
          },
          {
            name: 'memory_replace',
            arguments: { label: 'human', old_string: 'Likes tea', new_string: 'x' },
          },
          { name: 'memory_insert', arguments: { label: 'persona', new_string: 'x' } },
        ],
      },
      {
        tool_calls: [
          {
            name: 'memory_replace',
            arguments: { label: 'human', old_string: 'Ann', new_string: 'Ada' },
          },
          {
            name: 'memory_insert',
            arguments: { label: 'human', new_string: 'Age: 30', insert_line: 1 },
          },
        ],
      },
      { content: 'noted' },
    );
    const res = await send(a.id);
    const returns = res.messages.filter((m: any) => m.message_type === 'tool_return_message');
    expect(returns.map((r: any) => r.status)).toEqual([
      'error',
      'error',
      'error',
      'success',
      'success',
    ]);
    expect(returns[0].tool_return).toContain(
      'No replacement was performed, old_string `Bob` did not appear verbatim in memory block with label `human`.',
    );
    expect(returns[1].tool_return).toContain(
      'No replacement was performed. Multiple occurrences of old_string `Likes tea` in lines [2, 3]. Please ensure it is unique.',
    );
    expect(returns[2].tool_return).toContain('read-only');
    expect(JSON.parse(returns[4].tool_return).message).toBe(
      'Name: Ada\nAge: 30\nLikes tea\nLikes tea',
    );
    const human = await api(t, 'GET', `/v1/agents/${a.id}/core-memory/blocks/human`);
    expect(human.body.value).toBe('Name: Ada\nAge: 30\nLikes tea\nLikes tea');
    expect(res.stop_reason.stop_reason).toBe('end_turn');
  });

  it("memgpt_agent's core_memory_append / core_memory_replace: the limit, read_only and a missing label or text are the model's tool errors; an edit is in the next call's prompt", async () => {
    const a = await agentOf({
      memory_blocks: [
        { label: 'human', value: 'Ann', limit: 10 },
        { label: 'persona', value: 'fixed', read_only: true },
      ],
    });
    const call = (name: string, args: Record<string, unknown>) => ({
      name,
      arguments: { ...args, request_heartbeat: true },
    });
    fake.push(
      {
        tool_calls: [
          call('core_memory_append', { label: 'human', content: 'a long addition' }),
          call('core_memory_append', { label: 'persona', content: 'x' }),
          call('core_memory_append', { label: 'nope', content: 'x' }),
          call('core_memory_replace', { label: 'human', old_content: 'Bob', new_content: 'x' }),
        ],
      },
      {
        tool_calls: [
          call('core_memory_replace', { label: 'human', old_content: 'Ann', new_content: 'Ada' }),
        ],
      },
      { content: 'noted' },
    );
    const res = await send(a.id);
    const returns = res.messages.filter((m: any) => m.message_type === 'tool_return_message');
    expect(returns.map((r: any) => r.status)).toEqual([
      'error',
      'error',
      'error',
      'error',
      'success',
    ]);
    const texts = returns.map((r: any) => JSON.parse(r.tool_return).message as string);
    expect(texts[0]).toMatch(/limit/);
    expect(texts[1]).toMatch(/read-only/);
    expect(texts[2]).toMatch(/nope/);
    expect(texts[3]).toMatch(/Bob/);
    // the refused edits changed nothing; the last one is what the next model call reads
    expect(fake.requests[1].system).toContain('### human\nAnn');
    expect(fake.requests[2].system).toContain('### human\nAda');
    expect(fake.requests[2].system).toContain('### persona\nfixed');
    const human = await api(t, 'GET', `/v1/agents/${a.id}/core-memory/blocks/human`);
    expect(human.body.value).toBe('Ada');
    expect(res.stop_reason.stop_reason).toBe('end_turn');
  });
});
