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

/** Letta's client-side tools: offered under the agent's rules, run by the client, answered with a ToolReturn. */
describe('client tools', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let tools: ToolServer;

  beforeAll(async () => {
    env = await startLoopEnv(['lookup', ['audit', { safety: 'side_effecting' }]]);
    ({ t, fake, tools } = env);
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const BASH = {
    name: 'Bash',
    description: 'Runs a shell command on the client',
    parameters: {
      type: 'object',
      properties: { command: { type: 'string' } },
      required: ['command'],
    },
  };
  const toolReturn = (id: string, out: string, status = 'success') => ({
    messages: [
      {
        type: 'approval',
        approvals: [{ type: 'tool', tool_call_id: id, tool_return: out, status }],
      },
    ],
    client_tools: [BASH],
  });

  it('a call parks as an approval request; the ToolReturn is its result and the batch continues', async () => {
    const id = await createAgent(t, fake, { tools: ['lookup'], include_base_tools: false });
    fake.push(
      {
        tool_calls: [
          { id: 'call_b1', name: 'Bash', arguments: { command: 'ls', request_heartbeat: true } },
        ],
      },
      { content: 'two files' },
    );
    const first = await api(
      t,
      'POST',
      `/v1/agents/${id}/messages`,
      say('list', { client_tools: [BASH] }),
    );
    expect(first.status).toBe(200);
    expect(fake.requests[0].toolNames).toEqual(expect.arrayContaining(['lookup', 'Bash']));
    expect(first.body.stop_reason.stop_reason).toBe('requires_approval');
    const req = first.body.messages.at(-1);
    expect(req.message_type).toBe('approval_request_message');
    expect(req.tool_call).toMatchObject({ name: 'Bash', tool_call_id: 'call_b1' });
    expect((await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval).toBeTruthy();

    // a decision is not a result: the client must say what the tool returned
    const bare = await api(t, 'POST', `/v1/agents/${id}/messages`, {
      messages: [
        {
          type: 'approval',
          approvals: [{ type: 'approval', tool_call_id: 'call_b1', approve: true }],
        },
      ],
    });
    expect(bare.status).toBe(400);
    expect(bare.body.code).toBe('CLIENT_TOOL_RESULT_REQUIRED');

    const second = await api(
      t,
      'POST',
      `/v1/agents/${id}/messages`,
      toolReturn('call_b1', 'a.txt b.txt'),
    );
    expect(second.status).toBe(200);
    expect(types(second.body.messages)).toEqual(['tool_return_message', 'assistant_message']);
    expect(second.body.messages[0]).toMatchObject({
      tool_return: 'a.txt b.txt',
      status: 'success',
      name: 'Bash',
    });
    expect(second.body.stop_reason.stop_reason).toBe('end_turn');
    // the approval response is history only, with Letta's ToolReturn item
    const written = (await api(t, 'GET', `/v1/runs/${second.body.run_id}/messages`)).body;
    expect(written[0]).toMatchObject({
      message_type: 'approval_response_message',
      approvals: [
        { type: 'tool', tool_call_id: 'call_b1', tool_return: 'a.txt b.txt', status: 'success' },
      ],
      approve: null,
      approval_request_id: null,
    });
    // the model saw the client's result
    const toolMsg = fake.requests[1].messages.find((m: any) => m.role === 'tool');
    expect(toolMsg.content).toContain('a.txt b.txt');
  });

  it('the client may refuse: an error return, and the batch continues', async () => {
    const id = await createAgent(t, fake, { include_base_tools: false });
    fake.push(
      { tool_calls: [{ id: 'call_b2', name: 'Bash', arguments: { command: 'rm -rf /' } }] },
      { content: 'ok, not then' },
    );
    await api(t, 'POST', `/v1/agents/${id}/messages`, say('clean', { client_tools: [BASH] }));
    const res = await api(t, 'POST', `/v1/agents/${id}/messages`, {
      messages: [
        {
          type: 'approval',
          approvals: [
            { type: 'approval', tool_call_id: 'call_b2', approve: false, reason: 'no way' },
          ],
        },
      ],
    });
    expect(res.status).toBe(200);
    const ret = res.body.messages.find((m: any) => m.message_type === 'tool_return_message');
    expect(ret.status).toBe('error');
    expect(ret.tool_return).toContain('no way');
  });

  it("client_tools may not redeclare the agent's tools; bounds are 400s", async () => {
    const id = await createAgent(t, fake, { tools: ['lookup'], include_base_tools: false });
    const clash = await api(
      t,
      'POST',
      `/v1/agents/${id}/messages`,
      say('x', { client_tools: [{ name: 'lookup' }] }),
    );
    expect(clash.status).toBe(400);
    expect(clash.body.code).toBe('CLIENT_TOOL_CONFLICT');
    const many = Array.from({ length: t.config.processing.max_client_tools + 1 }, (_, i) => ({
      name: `t${i}`,
    }));
    const tooMany = await api(
      t,
      'POST',
      `/v1/agents/${id}/messages`,
      say('x', { client_tools: many }),
    );
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.details.problems[0].path).toBe('client_tools');
  });

  it('rules name client tools the agent declares: a max count refuses the second call', async () => {
    const id = await createAgent(t, fake, {
      include_base_tools: false,
      client_tools: ['Bash'],
      tool_rules: [{ type: 'max_count_per_step', tool_name: 'Bash', max_count_limit: 1 }],
    });
    fake.push(
      {
        tool_calls: [
          { id: 'call_m1', name: 'Bash', arguments: { command: 'ls', request_heartbeat: true } },
        ],
      },
      { tool_calls: [{ id: 'call_m2', name: 'Bash', arguments: { command: 'ls -a' } }] },
      { content: 'done' },
    );
    await api(t, 'POST', `/v1/agents/${id}/messages`, say('list', { client_tools: [BASH] }));
    const res = await api(t, 'POST', `/v1/agents/${id}/messages`, toolReturn('call_m1', 'a b'));
    const refused = res.body.messages.find(
      (m: any) => m.message_type === 'tool_return_message' && m.tool_call_id === 'call_m2',
    );
    expect(refused.status).toBe('error');
    expect(refused.tool_return).toContain('[ToolRuleViolation]');
    // held back until its outcome was known: it did not park, so it is shown as a call
    const shown = res.body.messages
      .filter((m: any) => (m.tool_call?.tool_call_id ?? m.tool_call_id) === 'call_m2')
      .map((m: any) => m.message_type);
    expect(shown).toEqual(['tool_call_message', 'tool_return_message']);
    expect(res.body.stop_reason.stop_reason).toBe('end_turn');
  });

  it('a client tool that needs consent is approved by a person before the client is asked to run it', async () => {
    const id = await createAgent(t, fake, {
      include_base_tools: false,
      client_tools: ['Bash'],
      tool_rules: [{ type: 'requires_consent', tool_name: 'Bash' }],
    });
    fake.push(
      { tool_calls: [{ id: 'call_c1', name: 'Bash', arguments: { command: 'deploy' } }] },
      { content: 'deployed' },
    );
    const first = await api(
      t,
      'POST',
      `/v1/agents/${id}/messages`,
      say('deploy', { client_tools: [BASH] }),
    );
    const pending = first.body.messages.at(-1);
    expect(pending.message_type).toBe('approval_request_message');
    expect(pending.request_id).toMatch(/^consent-/);
    // the client may not run it before a person said yes
    const early = await api(
      t,
      'POST',
      `/v1/agents/${id}/messages`,
      toolReturn('call_c1', 'ran anyway'),
    );
    expect(early.status).toBe(400);
    expect(early.body.code).toBe('CONSENT_REQUIRED');
    // a person approves in band: now the client is asked to run it
    const approved = await api(t, 'POST', `/v1/agents/${id}/messages`, {
      messages: [
        {
          type: 'approval',
          approvals: [{ type: 'approval', tool_call_id: 'call_c1', approve: true }],
        },
      ],
      client_tools: [BASH],
    });
    expect(approved.body.stop_reason.stop_reason).toBe('requires_approval');
    const ask = approved.body.messages.at(-1);
    expect(ask).toMatchObject({ message_type: 'approval_request_message', request_id: null });
    const done = await api(
      t,
      'POST',
      `/v1/agents/${id}/messages`,
      toolReturn('call_c1', 'deployed ok'),
    );
    expect(
      done.body.messages.find((m: any) => m.message_type === 'tool_return_message'),
    ).toMatchObject({
      tool_return: 'deployed ok',
      status: 'success',
    });
    expect(done.body.stop_reason.stop_reason).toBe('end_turn');
  });

  describe("a turn's calls after a client call are judged as coming after it, and never run ahead of it", () => {
    const orderedAgent = (rules: any[]) =>
      createAgent(t, fake, {
        tools: ['lookup', 'audit'],
        include_base_tools: false,
        client_tools: ['Bash'],
        tool_rules: rules,
      });
    /** The model's turn parks: the response, and the calls its approval request lists. */
    async function parkTurn(agentId: string, turn: any[], next: any[]) {
      fake.push({ tool_calls: turn }, ...next);
      const res = await api(
        t,
        'POST',
        `/v1/agents/${agentId}/messages`,
        say('list', { client_tools: [BASH] }),
      );
      expect(res.body.stop_reason.stop_reason).toBe('requires_approval');
      return {
        res,
        listed: res.body.messages.at(-1).tool_calls.map((c: any) => c.tool_call_id),
      };
    }
    const returnOf = (res: any, id: string) =>
      res.body.messages.find(
        (m: any) => m.message_type === 'tool_return_message' && m.tool_call_id === id,
      );

    it('constrain_child_tools Bash → [lookup]: audit and lookup are held until the client answers, then judged right after Bash: audit refused, lookup runs', async () => {
      const id = await orderedAgent([
        { type: 'constrain_child_tools', tool_name: 'Bash', children: ['lookup'] },
      ]);
      const { res: first, listed } = await parkTurn(
        id,
        [
          { id: 'call_bash', name: 'Bash', arguments: { command: 'ls' } },
          { id: 'call_audit', name: 'audit', arguments: { q: 'ls' } },
          { id: 'call_look', name: 'lookup', arguments: { q: 'a.txt' } },
        ],
        [{ content: 'done' }],
      );
      // only Bash is asked for; the held calls are shown as made, before the request, with no return yet
      expect(listed).toEqual(['call_bash']);
      expect(
        first.body.messages
          .filter((m: any) => m.message_type === 'tool_call_message')
          .map((m: any) => m.tool_call.tool_call_id),
      ).toEqual(['call_audit', 'call_look']);
      expect(returnOf(first, 'call_audit')).toBeUndefined();
      expect(returnOf(first, 'call_look')).toBeUndefined();
      // nothing ran on the server before the client ran Bash
      expect(tools.calls).toEqual([]);

      const done = await api(
        t,
        'POST',
        `/v1/agents/${id}/messages`,
        toolReturn('call_bash', 'a.txt'),
      );
      expect(done.body.stop_reason.stop_reason).toBe('end_turn');
      // judged in the turn's order, right after Bash: only its child may run
      expect(returnOf(done, 'call_audit').tool_return).toBe(
        '[ToolRuleViolation] right after Bash only lookup may run, not audit; allowed now: lookup',
      );
      expect(returnOf(done, 'call_look')).toMatchObject({ status: 'success', name: 'lookup' });
      expect(tools.calls.map((c) => c.tool_call_id)).toEqual(['call_look']);
      // the model sees the returns in its turn's order
      const toolMsgs = fake.requests[1].messages.filter((m: any) => m.role === 'tool');
      expect(toolMsgs.map((m: any) => m.tool_call_id)).toEqual([
        'call_bash',
        'call_audit',
        'call_look',
      ]);
      // the messages list tells the same: each call once, then its return
      const listedMsgs = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&limit=50`))
        .body as any[];
      const calls = listedMsgs.filter((m) => m.message_type === 'tool_call_message');
      expect(calls.map((m) => m.tool_call.tool_call_id)).toEqual(['call_audit', 'call_look']);
      const returns = listedMsgs.filter((m) => m.message_type === 'tool_return_message');
      expect(returns.map((m) => m.tool_call_id)).toEqual(['call_bash', 'call_audit', 'call_look']);
    });

    it("parent_last_tool Bash → [lookup] with consent on lookup: lookup is asked about; the client's result and the approval in one answer run Bash's result first, then lookup", async () => {
      const id = await orderedAgent([
        { type: 'parent_last_tool', tool_name: 'Bash', children: ['lookup'] },
        { type: 'requires_approval', tool_name: 'lookup' },
      ]);
      const { listed } = await parkTurn(
        id,
        [
          { id: 'call_bash', name: 'Bash', arguments: { command: 'ls' } },
          { id: 'call_look', name: 'lookup', arguments: { q: 'a.txt' } },
        ],
        [{ content: 'done' }],
      );
      // lookup may run right after Bash: both are in the request, in the turn's order
      expect(listed).toEqual(['call_bash', 'call_look']);
      const done = await api(t, 'POST', `/v1/agents/${id}/messages`, {
        messages: [
          {
            type: 'approval',
            approvals: [
              { type: 'approval', tool_call_id: 'call_look', approve: true },
              { type: 'tool', tool_call_id: 'call_bash', tool_return: 'a.txt', status: 'success' },
            ],
          },
        ],
        client_tools: [BASH],
      });
      expect(done.status).toBe(200);
      expect(returnOf(done, 'call_look')).toMatchObject({ status: 'success', name: 'lookup' });
      expect(tools.calls.map((c) => c.tool_call_id)).toEqual(['call_look']);
      expect(done.body.stop_reason.stop_reason).toBe('end_turn');
      // the model sees the returns in its turn's order
      const toolMsgs = fake.requests[1].messages.filter((m: any) => m.role === 'tool');
      expect(toolMsgs.map((m: any) => m.tool_call_id)).toEqual(['call_bash', 'call_look']);
    });
  });
});
