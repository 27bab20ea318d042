/* eslint-disable @typescript-eslint/no-explicit-any */
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import {
  api,
  createAgent,
  LoopEnv,
  say,
  startLoopEnv,
  ToolServer,
  types,
} from '../support/processing-fixtures';

/** Each loop decision of issue 4, through the fake model server and real http tools. */
describe('processing: loop decisions', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let tools: ToolServer;

  beforeAll(async () => {
    env = await startLoopEnv(['lookup', 'act', 'plan', 'finish', 'save']);
    ({ t, fake, tools } = env);
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const agent = (toolNames: string[], rules: unknown[] = [], over: Record<string, unknown> = {}) =>
    createAgent(t, fake, {
      tools: toolNames,
      tool_rules: rules,
      include_base_tools: false,
      ...over,
    });
  const send = async (agentId: string, text = 'go', extra: Record<string, unknown> = {}) => {
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say(text, extra));
    expect(res.status).toBe(200);
    return res.body;
  };
  const heartbeats = (messages: any[]) =>
    messages.filter(
      (m) => m.message_type === 'user_message' && String(m.content).includes('"heartbeat"'),
    );

  it("continue_loop: the next model call is in the same pass, after Letta's heartbeat", async () => {
    const id = await agent(['lookup'], [{ type: 'continue_loop', tool_name: 'lookup' }]);
    fake.push({ tool_calls: [{ name: 'lookup', arguments: { q: 'a' } }] }, { content: 'done' });
    const res = await send(id);
    expect(res.stop_reason.stop_reason).toBe('end_turn');
    expect(fake.requests).toHaveLength(2);
    const written = (await api(t, 'GET', `/v1/runs/${res.run_id}/messages`)).body;
    expect(heartbeats(written)).toHaveLength(1);
    // the second call sees the tool result, then the heartbeat (test/e2e/heartbeat-messages.e2e-spec.ts)
    expect(fake.requests[1].messages.at(-2)).toMatchObject({ role: 'tool', content: 'ok:lookup' });
    expect(res.usage.step_count).toBe(2);
  });

  it('a child rule: the next call is forced to the child (offered tools and tool_choice)', async () => {
    const id = await agent(
      ['plan', 'act', 'lookup'],
      [{ type: 'constrain_child_tools', tool_name: 'plan', children: ['act'] }],
    );
    fake.push(
      { tool_calls: [{ name: 'plan', arguments: {} }] },
      { tool_calls: [{ name: 'act', arguments: {} }] },
    );
    const res = await send(id);
    expect(fake.requests[0].toolNames.sort()).toEqual(['act', 'lookup', 'plan']);
    expect(fake.requests[0].tool_choice).toBe('auto');
    expect(fake.requests[1].toolNames).toEqual(['act']);
    expect(fake.requests[1].tool_choice).toEqual({ type: 'function', function: { name: 'act' } });
    expect(res.stop_reason.stop_reason).toBe('end_turn');
    expect(tools.calls.map((c) => c.name)).toEqual(['plan', 'act']);
  });

  it("constrain_child_tools with Letta's child_arg_nodes: right after the parent, the child runs with the rule's args over the model's", async () => {
    const rules = [
      {
        type: 'constrain_child_tools',
        tool_name: 'plan',
        children: ['act', 'lookup'],
        child_arg_nodes: [{ name: 'act', args: { q: 'pinned' } }],
      },
    ];
    const id = await agent(['plan', 'act', 'lookup'], rules);
    expect((await api(t, 'GET', `/v1/agents/${id}`)).body.tool_rules).toEqual(rules);
    fake.push(
      { tool_calls: [{ name: 'plan', arguments: {} }] },
      { tool_calls: [{ name: 'act', arguments: { q: 'from the model' } }] },
      { tool_calls: [{ name: 'act', arguments: { q: 'later' }, id: 'again' }] },
    );
    await send(id, 'go', { max_steps: 2 });
    await send(id, 'again'); // not right after plan: the model's args
    expect(tools.calls.map((c) => [c.name, c.arguments])).toEqual([
      ['plan', {}],
      ['act', { q: 'pinned' }],
      ['act', { q: 'later' }],
    ]);

    const bad = await api(t, 'POST', '/v1/agents/', {
      name: 'bad-child-args',
      tools: ['plan', 'act', 'lookup'],
      tool_rules: [{ ...rules[0], child_arg_nodes: [{ name: 'plan', args: {} }] }],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.details.problems[0].path).toBe('tool_rules[0].child_arg_nodes[0].name');
  });

  it("parent_last_tool: right after the parent only its children may run, the one child forced (Letta's ParentToolRule)", async () => {
    const id = await agent(
      ['plan', 'act', 'lookup'],
      [{ type: 'parent_last_tool', tool_name: 'plan', children: ['act'] }],
    );
    fake.push(
      { tool_calls: [{ name: 'plan', arguments: {} }] },
      { tool_calls: [{ name: 'lookup', arguments: {} }] },
      { tool_calls: [{ name: 'act', arguments: {} }] },
    );
    const res = await send(id);
    expect(fake.requests[0].toolNames.sort()).toEqual(['lookup', 'plan']); // act: only after plan
    expect(fake.requests[1].toolNames).toEqual(['act']);
    expect(fake.requests[1].tool_choice).toEqual({ type: 'function', function: { name: 'act' } });
    const returns = res.messages.filter((m: any) => m.message_type === 'tool_return_message');
    expect(returns[1]).toMatchObject({ status: 'error' });
    expect(returns[1].tool_return).toContain('right after plan only act may run, not lookup');
    expect(tools.calls.map((c) => c.name)).toEqual(['plan', 'act']);
    expect(res.stop_reason.stop_reason).toBe('end_turn');
  });

  it('invalid JSON arguments and unknown tools come back as error returns; the model self-corrects', async () => {
    const id = await agent(['lookup']);
    fake.push(
      {
        tool_calls: [
          { name: 'lookup', arguments: '{"q": ' },
          { name: 'nope', arguments: {} },
        ],
      },
      { content: 'sorry, fixed' },
    );
    const res = await send(id);
    const returns = res.messages.filter((m: any) => m.message_type === 'tool_return_message');
    expect(returns.map((r: any) => r.status)).toEqual(['error', 'error']);
    expect(returns[1].tool_return).toContain('lookup'); // names what is available
    expect(tools.calls).toHaveLength(0);
    expect(fake.requests).toHaveLength(2);
    expect(res.stop_reason.stop_reason).toBe('end_turn');
  });

  it('request_heartbeat: a heartbeat message, then a new pass of the same batch', async () => {
    const id = await agent(['lookup']);
    fake.push(
      { tool_calls: [{ name: 'lookup', arguments: { q: 'x', request_heartbeat: true } }] },
      { content: 'after heartbeat' },
    );
    const res = await send(id);
    // the heartbeat is history only: Letta's responses leave the user messages a run writes out
    expect(types(res.messages)).toEqual([
      'tool_call_message',
      'tool_return_message',
      'assistant_message',
    ]);
    const written = (await api(t, 'GET', `/v1/runs/${res.run_id}/messages`)).body;
    expect(types(written)).toEqual([
      'user_message', // the request's
      'tool_call_message',
      'tool_return_message',
      'user_message',
      'assistant_message',
    ]);
    const hb = JSON.parse(heartbeats(written)[0].content);
    expect(hb.type).toBe('heartbeat');
    expect(typeof hb.reason).toBe('string');
    // request_heartbeat is stripped before execution
    expect(tools.calls[0].arguments).toEqual({ q: 'x' });
    expect(fake.requests[1].messages.at(-1)).toMatchObject({ role: 'user' });
    expect(res.stop_reason.stop_reason).toBe('end_turn');
  });

  it('request_heartbeat as the text "true" (models without strict schemas send it): a heartbeat, as Letta reads it', async () => {
    const id = await agent(['lookup']);
    fake.push(
      { tool_calls: [{ name: 'lookup', arguments: { q: 'x', request_heartbeat: 'True' } }] },
      { content: 'after heartbeat' },
    );
    const res = await send(id);
    expect(fake.requests).toHaveLength(2);
    expect(types(res.messages)).toEqual([
      'tool_call_message',
      'tool_return_message',
      'assistant_message',
    ]);
    const written = (await api(t, 'GET', `/v1/runs/${res.run_id}/messages`)).body;
    expect(heartbeats(written)).toHaveLength(1);
    expect(tools.calls[0].arguments).toEqual({ q: 'x' });

    // any other text is no request: the batch ends after the call
    fake.push({ tool_calls: [{ name: 'lookup', arguments: { q: 'y', request_heartbeat: 'no' } }] });
    const other = await send(id);
    expect(fake.requests).toHaveLength(3);
    expect(other.stop_reason.stop_reason).toBe('end_turn');
    expect(tools.calls[1].arguments).toEqual({ q: 'y' });
  });

  it('exit_loop: the batch ends with tool_rule even when a heartbeat was asked', async () => {
    const id = await agent(['finish', 'lookup'], [{ type: 'exit_loop', tool_name: 'finish' }]);
    fake.push({ tool_calls: [{ name: 'finish', arguments: { request_heartbeat: true } }] });
    const res = await send(id);
    expect(res.stop_reason.stop_reason).toBe('tool_rule');
    expect(fake.requests).toHaveLength(1);
    // as Letta's terminal tools: the exit tool is offered no request_heartbeat, the others are
    const offered = Object.fromEntries(
      fake.requests[0].tools.map((x: any) => [x.function.name, x.function.parameters.properties]),
    );
    expect(offered.finish).not.toHaveProperty('request_heartbeat');
    expect(offered.lookup).toHaveProperty('request_heartbeat');
  });

  it('exit_loop before its requirement: a reminder, the requirement runs, and the batch ends there (tool_rule)', async () => {
    const id = await agent(
      ['finish', 'save', 'lookup'],
      [
        { type: 'exit_loop', tool_name: 'finish' },
        { type: 'required_before_exit', tool_name: 'save' },
      ],
    );
    fake.push(
      { tool_calls: [{ name: 'finish', arguments: {} }] },
      // the requirement asks for a heartbeat: the exit asked for earlier in the pass wins
      { tool_calls: [{ name: 'save', arguments: { request_heartbeat: true } }] },
      { tool_calls: [{ name: 'lookup', arguments: {} }] },
    );
    const res = await send(id);
    expect(res.stop_reason.stop_reason).toBe('tool_rule');
    expect(tools.calls.map((c) => c.name)).toEqual(['finish', 'save']);
    expect(fake.requests).toHaveLength(2);
  });

  it('required_before_exit: reminders naming the tool, then tool_rule_violation after 3', async () => {
    const id = await agent(
      ['save', 'lookup'],
      [{ type: 'required_before_exit', tool_name: 'save' }],
    );
    fake.push({ content: 'bye' }, { content: 'bye' }, { content: 'bye' }, { content: 'bye' });
    const res = await send(id);
    expect(res.stop_reason.stop_reason).toBe('tool_rule_violation');
    expect(fake.requests).toHaveLength(4);
    expect(types(res.messages)).not.toContain('user_message');
    const written = (await api(t, 'GET', `/v1/runs/${res.run_id}/messages`)).body;
    const reminders = written.filter(
      (m: any) => m.message_type === 'user_message' && String(m.content).includes('save'),
    );
    expect(reminders).toHaveLength(3);
    const run = await api(t, 'GET', `/v1/runs/${res.run_id}`);
    expect(run.body.status).toBe('failed');
  });

  it('required_before_exit: a reminder, then the tool runs and the batch ends', async () => {
    const id = await agent(
      ['save', 'lookup'],
      [{ type: 'required_before_exit', tool_name: 'save' }],
    );
    fake.push({ content: 'bye' }, { tool_calls: [{ name: 'save', arguments: {} }] });
    const res = await send(id);
    expect(res.stop_reason.stop_reason).toBe('end_turn');
    expect(tools.calls.map((c) => c.name)).toEqual(['save']);
  });

  it('heartbeat scope boundary: a pass rule resets, a batch counter does not', async () => {
    const id = await agent(
      ['lookup', 'act'],
      [
        { type: 'run_first', tool_name: 'lookup' },
        { type: 'max_count_per_step', tool_name: 'act', max_count_limit: 1 },
      ],
    );
    fake.push(
      {
        tool_calls: [
          { name: 'lookup', arguments: {} },
          { name: 'act', arguments: { q: '1', request_heartbeat: true } },
        ],
      },
      {
        tool_calls: [
          { name: 'lookup', arguments: {} },
          { name: 'act', arguments: { q: '2', request_heartbeat: true } },
        ],
      },
      { content: 'done' },
    );
    const res = await send(id);
    // pass 1: only the start tool is offered, and forced
    expect(fake.requests[0].toolNames).toEqual(['lookup']);
    expect(fake.requests[0].tool_choice).toEqual({
      type: 'function',
      function: { name: 'lookup' },
    });
    // pass 2 (after the heartbeat): the start rule applies again
    expect(fake.requests[1].toolNames).toEqual(['lookup']);
    // ... but act's batch count carried over: the second act is refused, never executed
    expect(tools.calls.map((c) => c.name)).toEqual(['lookup', 'act', 'lookup']);
    const returns = res.messages.filter((m: any) => m.message_type === 'tool_return_message');
    expect(returns.at(-1).status).toBe('error');
    expect(res.stop_reason.stop_reason).toBe('end_turn');

    // a new batch resets the batch counter
    fake.push({
      tool_calls: [
        { name: 'lookup', arguments: {} },
        { name: 'act', arguments: { q: '3' } },
      ],
    });
    await send(id, 'again');
    expect(tools.calls.map((c) => c.name)).toEqual(['lookup', 'act', 'lookup', 'lookup', 'act']);
  });

  it('max_steps from the request stops the batch', async () => {
    const id = await agent(['lookup'], [{ type: 'continue_loop', tool_name: 'lookup' }]);
    fake.respond(() => ({ tool_calls: [{ name: 'lookup', arguments: { q: 'again' } }] }));
    const res = await send(id, 'loop', { max_steps: 3 });
    expect(res.stop_reason.stop_reason).toBe('max_steps');
    expect(fake.requests).toHaveLength(3);
    const steps = await api(t, 'GET', `/v1/runs/${res.run_id}/steps`);
    expect(steps.body).toHaveLength(3);
  });

  it('max_steps from the agent applies when the request has none', async () => {
    const id = await agent(['lookup'], [{ type: 'continue_loop', tool_name: 'lookup' }], {
      max_steps: 2,
    });
    fake.respond(() => ({ tool_calls: [{ name: 'lookup', arguments: { q: 'again' } }] }));
    const res = await send(id, 'loop');
    expect(res.stop_reason.stop_reason).toBe('max_steps');
    expect(fake.requests).toHaveLength(2);
  });
});

describe('processing: token budget', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  beforeAll(async () => {
    env = await startLoopEnv(['lookup'], {
      overrides: { processing: { max_tokens_per_batch: 250 } },
    });
    ({ t, fake } = env);
  });
  afterAll(() => env.close());

  it('stops with max_tokens_exceeded once the batch used its tokens', async () => {
    const id = await createAgent(t, fake, {
      tools: ['lookup'],
      tool_rules: [{ type: 'continue_loop', tool_name: 'lookup' }],
      include_base_tools: false,
    });
    fake.respond(() => ({
      tool_calls: [{ name: 'lookup', arguments: {} }],
      usage: { prompt_tokens: 90, completion_tokens: 10, total_tokens: 100 },
    }));
    const res = await api(t, 'POST', `/v1/agents/${id}/messages`, say('go'));
    expect(res.body.stop_reason.stop_reason).toBe('max_tokens_exceeded');
    expect(fake.requests).toHaveLength(3);
    expect(res.body.usage.total_tokens).toBe(300);
  });
});

describe('processing: a prompt the endpoint finds longer than its context window', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  beforeAll(async () => {
    env = await startLoopEnv();
    ({ t, fake } = env);
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const OVERFLOW = {
    status: 400,
    body: {
      error: {
        message:
          "This model's maximum context length is 2048 tokens. However, your messages resulted in 9000 tokens.",
        type: 'invalid_request_error',
        code: 'context_length_exceeded',
      },
    },
  };
  /** The endpoint's own count: more characters than `limit` in the messages is an overflow. */
  const endpointWithRoomFor = (limit: number) =>
    fake.respond((r) =>
      JSON.stringify(r.messages).length > limit ? OVERFLOW : { content: 'fits now' },
    );
  const texts = (r: { messages: any[] }) => r.messages.map((m) => String(m.content));
  /** An agent with ten long exchanges in its history (each well inside its 8000-token window). */
  const agentWithHistory = async () => {
    const id = await createAgent(t, fake, { include_base_tools: false });
    for (let i = 0; i < 10; i++) {
      fake.push({ content: `answer ${i}` });
      await api(t, 'POST', `/v1/agents/${id}/messages`, say(`message ${i} ${'x'.repeat(1000)}`));
    }
    fake.reset();
    return id;
  };

  it('the call is made again with a smaller context (system prompt and current message kept), and the run goes on', async () => {
    const id = await agentWithHistory();
    endpointWithRoomFor(6000);
    const res = await api(t, 'POST', `/v1/agents/${id}/messages`, say('the current one'));
    expect(res.status).toBe(200);
    expect(res.body.stop_reason.stop_reason).toBe('end_turn');
    expect(res.body.messages.map((m: any) => m.content)).toEqual(['fits now']);
    const [first, ...retries] = fake.requests;
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(retries.length).toBeLessThanOrEqual(2);
    const last = fake.requests.at(-1)!;
    expect(last.messages.length).toBeLessThan(first.messages.length);
    expect(last.messages[0]).toEqual(first.messages[0]); // the system prompt, with memory
    expect(texts(last).at(-1)).toBe('the current one');
    // the next send is the same story: no state is kept, and nothing is wedged
    const again = await api(t, 'POST', `/v1/agents/${id}/messages`, say('and again'));
    expect(again.body.stop_reason.stop_reason).toBe('end_turn');
  });

  it('a context that never fits fails the run with llm_api_error after a bounded number of tries', async () => {
    const id = await agentWithHistory();
    fake.respond(() => OVERFLOW);
    const res = await api(t, 'POST', `/v1/agents/${id}/messages`, say('too much'));
    expect(res.body.details).toMatchObject({
      stop_reason: 'llm_api_error',
      error_type: 'llm_bad_request',
    });
    expect(fake.requests.length).toBeGreaterThanOrEqual(2);
    expect(fake.requests.length).toBeLessThanOrEqual(3);
    const run = (await api(t, 'GET', `/v1/runs/${res.body.details.run_id}`)).body;
    expect(run.metadata.error.detail).toMatch(
      /^the prompt does not fit the model's context window \(\d+ tokens by our count, .*maximum context length is 2048/,
    );
  });

  it("the agent's own context_window: the newest history that fits is sent, with the system prompt, memory and the current message; the history keeps all", async () => {
    const id = await createAgent(t, fake, {
      include_base_tools: false,
      memory_blocks: [{ label: 'human', value: 'Name: Ann' }],
      llm_config: {
        model: 'fake',
        model_endpoint_type: 'openai',
        model_endpoint: fake.baseUrl,
        context_window: 2000,
      },
    });
    for (let i = 0; i < 8; i++) {
      fake.push({ content: `answer ${i}` });
      await api(t, 'POST', `/v1/agents/${id}/messages`, say(`message ${i} ${'word '.repeat(300)}`));
    }
    const last = fake.requests.at(-1)!;
    expect(last.messages[0].role).toBe('system');
    expect(last.system).toContain('### human\nName: Ann');
    const sent = texts(last);
    expect(sent.at(-1)).toMatch(/^message 7 /);
    expect(sent.some((x) => x.startsWith('message 0 '))).toBe(false); // the oldest did not fit
    expect(sent.some((x) => x.startsWith('message 6 '))).toBe(true);
    // the sent ones are the newest, in order
    const numbers = sent.flatMap((x) => /^message (\d) /.exec(x)?.[1] ?? []).map(Number);
    expect(numbers).toEqual(numbers.map((_, k) => 8 - numbers.length + k));
    const history = (await api(t, 'GET', `/v1/agents/${id}/messages?limit=100`)).body;
    expect(history.filter((m: any) => m.message_type === 'user_message')).toHaveLength(8);
  });

  it('without an overflow there is one call, with the whole context (the hot path is unchanged)', async () => {
    const id = await agentWithHistory();
    endpointWithRoomFor(1_000_000);
    const res = await api(t, 'POST', `/v1/agents/${id}/messages`, say('plenty of room'));
    expect(res.body.stop_reason.stop_reason).toBe('end_turn');
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].messages).toHaveLength(1 + 2 * 10 + 1);
  });
});
