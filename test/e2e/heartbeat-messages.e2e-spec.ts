/* eslint-disable @typescript-eslint/no-explicit-any */
import { ProcessingRepository } from '../../src/processing/processing.repository';
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer, FakeTurn } from '../support/fake-model-server';
import {
  api,
  createAgent,
  isHeartbeat,
  LoopEnv,
  say,
  startLoopEnv,
  ToolServer,
  types,
} from '../support/processing-fixtures';

const HIDDEN = '[This is an automated system message hidden from the user] ';

/**
 * The heartbeat user messages Letta's loops write when a batch goes on after a model turn
 * (letta_agent_v2.py / letta_agent_v3.py `_decide_continuation`, `create_heartbeat_system_message`):
 * their text, where they are stored, what the next model call reads, and what responses show.
 */
describe("processing: the heartbeat messages Letta's loops write", () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let tools: ToolServer;

  beforeAll(async () => {
    env = await startLoopEnv(['lookup', 'plan', 'act', 'finish', 'save', 'broken']);
    ({ t, fake, tools } = env);
  });
  afterAll(() => env.close());
  beforeEach(() => {
    env.reset();
    tools.handle('broken', () => ({ status: 500, body: 'boom' }));
  });

  const agent = (rules: unknown[] = [], over: Record<string, unknown> = {}) =>
    createAgent(t, fake, {
      tools: ['lookup', 'plan', 'act', 'finish', 'save', 'broken'],
      tool_rules: rules,
      include_base_tools: false,
      ...over,
    });
  const send = async (agentId: string, extra: Record<string, unknown> = {}) => {
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say('go', extra));
    expect(res.status).toBe(200);
    return res.body;
  };
  const written = async (runId: string) =>
    (await api(t, 'GET', `/v1/runs/${runId}/messages`)).body as any[];
  const reasons = async (runId: string) =>
    (await written(runId)).filter(isHeartbeat).map((m) => JSON.parse(m.content).reason as string);

  it('continue_loop: a heartbeat "Continuing: continue tool rule." after the tool return, with its step, read by the next call, left out of the response', async () => {
    const id = await agent([{ type: 'continue_loop', tool_name: 'lookup' }]);
    fake.push({ tool_calls: [{ name: 'lookup', arguments: { q: 'a' } }] }, { content: 'done' });
    const res = await send(id);
    expect(res.stop_reason.stop_reason).toBe('end_turn');
    // Letta's responses and streams leave out the user messages a run writes
    expect(types(res.messages)).toEqual([
      'tool_call_message',
      'tool_return_message',
      'assistant_message',
    ]);
    const rows = await written(res.run_id);
    expect(types(rows)).toEqual([
      'user_message',
      'tool_call_message',
      'tool_return_message',
      'user_message',
      'assistant_message',
    ]);
    const hb = rows[3];
    expect(hb.content).toMatch(/^\{\n {2}"type": "heartbeat",\n {2}"reason": /);
    expect(JSON.parse(hb.content).reason).toBe(`${HIDDEN}Continuing: continue tool rule.`);
    // stored with the turn's step, as Letta's create_letta_messages_from_llm_response does
    expect(hb.step_id).toBe(rows[2].step_id);
    // the next model call reads the tool's result, then the heartbeat
    expect(fake.requests[1].messages.slice(-2)).toEqual([
      expect.objectContaining({ role: 'tool', content: 'ok:lookup' }),
      { role: 'user', content: hb.content },
    ]);
    // the agent's history lists it as Letta does: a user_message with the packed JSON
    const history = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc`)).body;
    expect(history.find((m: any) => m.id === hb.id)).toMatchObject({
      message_type: 'user_message',
      content: hb.content,
    });
    // a stream leaves it out too
    fake.push({ tool_calls: [{ name: 'lookup', arguments: { q: 'b' } }] }, { content: 'again' });
    const sse = await api(t, 'POST', `/v1/agents/${id}/messages/stream`, say('again'));
    const frames = String(sse.body)
      .split('\n\n')
      .filter((f) => f.startsWith('data: {'))
      .map((f) => JSON.parse(f.slice(6)));
    expect(frames.map((f) => f.message_type)).not.toContain('user_message');
    expect(fake.requests[3].messages.at(-1).content).toContain('Continuing: continue tool rule.');
  });

  const rows: [string, unknown[], FakeTurn[], string[], string][] = [
    [
      'request_heartbeat: true → REQ_HEARTBEAT_MESSAGE',
      [],
      [
        { tool_calls: [{ name: 'lookup', arguments: { request_heartbeat: true } }] },
        { content: 'ok' },
      ],
      [`${HIDDEN}Function called using request_heartbeat=true, returning control`],
      'end_turn',
    ],
    [
      'a child rule → "Continuing: child tool rule."',
      [{ type: 'constrain_child_tools', tool_name: 'plan', children: ['act'] }],
      [
        { tool_calls: [{ name: 'plan', arguments: {} }] },
        { tool_calls: [{ name: 'act', arguments: {} }] },
      ],
      [`${HIDDEN}Continuing: child tool rule.`],
      'end_turn',
    ],
    [
      'an unknown tool → "Continuing: tool rule violation."',
      [],
      [{ tool_calls: [{ name: 'nope', arguments: {} }] }, { content: 'sorry' }],
      [`${HIDDEN}Continuing: tool rule violation.`],
      'end_turn',
    ],
    [
      'a call the rules do not allow now → "Continuing: tool rule violation."',
      [{ type: 'parent_last_tool', tool_name: 'plan', children: ['act'] }],
      [{ tool_calls: [{ name: 'act', arguments: {} }] }, { content: 'sorry' }],
      [`${HIDDEN}Continuing: tool rule violation.`],
      'end_turn',
    ],
    [
      'a tool that failed → FUNC_FAILED_HEARTBEAT_MESSAGE',
      [],
      [{ tool_calls: [{ name: 'broken', arguments: {} }] }, { content: 'it broke' }],
      [`${HIDDEN}Function call failed, returning control`],
      'end_turn',
    ],
    [
      'an exit_loop call before its required tool → "Continuing, user expects these tools: [save] to be called still."',
      [
        { type: 'exit_loop', tool_name: 'finish' },
        { type: 'required_before_exit', tool_name: 'save' },
      ],
      [
        { tool_calls: [{ name: 'finish', arguments: {} }] },
        { tool_calls: [{ name: 'save', arguments: {} }] },
      ],
      [`${HIDDEN}Continuing, user expects these tools: [save] to be called still.`],
      'tool_rule',
    ],
    [
      'an answer without a call before the required tool → "ToolRuleViolated: You must call save at least once to exit the loop."',
      [{ type: 'required_before_exit', tool_name: 'save' }],
      [{ content: 'bye' }, { tool_calls: [{ name: 'save', arguments: {} }] }],
      [`${HIDDEN}ToolRuleViolated: You must call save at least once to exit the loop.`],
      'end_turn',
    ],
    [
      'a call that ends the turn → none',
      [],
      [{ tool_calls: [{ name: 'lookup', arguments: {} }] }],
      [],
      'end_turn',
    ],
  ];
  it.each(rows)('memgpt_agent: %s', async (_name, rules, turns, expected, stopReason) => {
    const id = await agent(rules);
    fake.push(...turns);
    const res = await send(id);
    expect(res.stop_reason.stop_reason).toBe(stopReason);
    expect(await reasons(res.run_id)).toEqual(expected);
    expect(types(res.messages)).not.toContain('user_message');
  });

  it('a turn whose batch goes on stores its last return and its heartbeat in one write (the earlier returns each as its call finished)', async () => {
    const id = await agent([{ type: 'continue_loop', tool_name: 'lookup' }]);
    fake.push(
      {
        tool_calls: [
          { name: 'lookup', arguments: { q: 'a' } },
          { name: 'lookup', arguments: { q: 'b' } },
        ],
      },
      { content: 'done' },
    );
    const append = jest.spyOn(t.app.get(ProcessingRepository), 'append');
    try {
      const res = await send(id);
      expect(res.stop_reason.stop_reason).toBe('end_turn');
      const writes = append.mock.calls
        .map(([, rows]) => rows.map((r) => r.message_type))
        .filter((w) => w.includes('tool_return_message') || w.includes('user_message'));
      expect(writes).toEqual([
        ['user_message'], // the input
        ['tool_return_message'],
        ['tool_return_message', 'user_message'],
      ]);
    } finally {
      append.mockRestore();
    }
  });

  it('max_steps after a continued call: the heartbeat is stored before the budget stops the batch, and the next batch reads it', async () => {
    const id = await agent([{ type: 'continue_loop', tool_name: 'lookup' }]);
    fake.push({ tool_calls: [{ name: 'lookup', arguments: {} }] });
    const res = await send(id, { max_steps: 1 });
    expect(res.stop_reason.stop_reason).toBe('max_steps');
    expect(await reasons(res.run_id)).toEqual([`${HIDDEN}Continuing: continue tool rule.`]);
    fake.push({ content: 'hello' });
    await send(id);
    const context = fake.requests[1].messages.map((m: any) => m.role);
    expect(context.slice(-4)).toEqual(['assistant', 'tool', 'user', 'user']);
  });

  it("letta_v1_agent: no heartbeat after calls (Letta's v3 loop), a ToolRuleViolated one after an answer without the required tool", async () => {
    const id = await agent(
      [
        { type: 'continue_loop', tool_name: 'lookup' },
        { type: 'required_before_exit', tool_name: 'save' },
      ],
      { agent_type: 'letta_v1_agent' },
    );
    fake.push(
      { tool_calls: [{ name: 'lookup', arguments: {} }] },
      { tool_calls: [{ name: 'broken', arguments: {} }] },
      { content: 'bye' },
      { tool_calls: [{ name: 'save', arguments: {} }] },
      { content: 'saved, bye' },
    );
    const res = await send(id);
    expect(res.stop_reason.stop_reason).toBe('end_turn');
    expect(await reasons(res.run_id)).toEqual([
      `${HIDDEN}ToolRuleViolated: You must call save at least once to exit the loop.`,
    ]);
    // the heartbeat follows the answer it answers, as Letta persists them together
    const rows = await written(res.run_id);
    const at = rows.findIndex(isHeartbeat);
    expect(rows[at - 1]).toMatchObject({ message_type: 'assistant_message', content: 'bye' });
    expect(rows[at].step_id).toBe(rows[at - 1].step_id);
  });

  it("message search and conversation_search leave heartbeats out, as Letta's message search indexes none", async () => {
    // Letta's MessageManager._extract_message_text: a text that is JSON of type "heartbeat" is not searchable
    const id = await agent([{ type: 'continue_loop', tool_name: 'lookup' }], {
      tools: ['lookup', 'conversation_search'],
    });
    fake.push({ tool_calls: [{ name: 'lookup', arguments: {} }] }, { content: 'done' });
    const first = await send(id);
    expect(await reasons(first.run_id)).toEqual([`${HIDDEN}Continuing: continue tool rule.`]);
    // a user's own words about a heartbeat are searchable; a user message that is a heartbeat is not
    for (const content of [
      'my heartbeat is continuing fast',
      JSON.stringify({ type: 'heartbeat', reason: 'continuing by hand' }),
    ])
      expect((await api(t, 'POST', `/v1/agents/${id}/messages`, say(content))).status).toBe(200);
    const search = async (query: string) => {
      const res = await api(t, 'POST', '/v1/messages/search', { query, agent_id: id });
      expect(res.status).toBe(200);
      return (res.body as any[]).map((m) => m.content);
    };
    expect(await search('continuing')).toEqual(['my heartbeat is continuing fast']);
    expect(await search('"type"')).toEqual([]);
    // the agent's own search tool sees the same
    fake.push(
      {
        tool_calls: [
          {
            name: 'conversation_search',
            arguments: { query: 'continuing', request_heartbeat: true },
          },
        ],
      },
      { content: 'found it' },
    );
    const found = await send(id);
    const ret = found.messages.find((m: any) => m.message_type === 'tool_return_message');
    const hits = JSON.parse(JSON.parse(ret.tool_return).message);
    expect(hits.map((h: any) => h.content)).toEqual(['my heartbeat is continuing fast']);
  });
});
