/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies and frames are free-form JSON */
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import {
  api,
  createAgent,
  LoopEnv,
  runEnded,
  say,
  startLoopEnv,
  ToolServer,
} from '../support/processing-fixtures';
import { WsClient } from './consent-helpers';

/**
 * A model turn that holds two calls needing consent, where the second would be refused (cooldown, dedupe,
 * an ordering rule) once the first runs: a person is asked about the first only; the second is answered at once.
 */
describe('consent: a person is never asked about a call of the same turn that could not run', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let tools: ToolServer;
  const sockets: WsClient[] = [];

  beforeAll(async () => {
    env = await startLoopEnv([
      ['pay', { safety: 'side_effecting' }],
      'lookup',
      ['draft', { safety: 'side_effecting' }],
      ['send', { safety: 'side_effecting' }],
      ['publish', { safety: 'side_effecting' }],
      'check',
    ]);
    ({ t, fake, tools } = env);
  });
  afterEach(() => Promise.all(sockets.splice(0).map((s) => s.close())));
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const anAgent = (rules: any[]) =>
    createAgent(t, fake, {
      tools: ['pay', 'lookup'],
      tool_rules: [{ type: 'requires_approval', tool_name: 'pay', scope: 'money' }, ...rules],
      include_base_tools: false,
    });

  const requestsOf = async (agentId: string) =>
    (await api(t, 'GET', `/v1/consent/requests?status=all&agent_id=${agentId}`)).body as any[];

  /** The model's turn; the parked response, its approval request and the refused call's return. */
  async function parkTurn(agentId: string, calls: any[], refusedId: string) {
    fake.push({ tool_calls: calls }, { content: 'done' });
    const res = (await api(t, 'POST', `/v1/agents/${agentId}/messages`, say('pay'))).body;
    expect(res.stop_reason.stop_reason).toBe('requires_approval');
    const approval = res.messages.find((m: any) => m.message_type === 'approval_request_message');
    const refused = res.messages.find(
      (m: any) => m.message_type === 'tool_return_message' && m.tool_call_id === refusedId,
    );
    return { res, approval, refused };
  }

  /** The calls a parked response holds: shown as made, with no return and not in its approval request. */
  const heldIn = (res: any): string[] => {
    const messages = res.body.messages as any[];
    const listed = messages.at(-1).tool_calls.map((c: any) => c.tool_call_id);
    const returned = messages
      .filter((m) => m.message_type === 'tool_return_message')
      .map((m) => m.tool_call_id);
    return messages
      .filter((m) => m.message_type === 'tool_call_message')
      .map((m) => m.tool_call.tool_call_id)
      .filter((id: string) => !listed.includes(id) && !returned.includes(id));
  };
  const approveInBand = (ids: string[]) => ({
    messages: [
      {
        type: 'approval',
        approvals: ids.map((tool_call_id) => ({ type: 'approval', tool_call_id, approve: true })),
      },
    ],
  });

  /** The continuation a decision started has ended. */
  async function continued(parkedRunId: string): Promise<any> {
    for (;;) {
      const run = (await api(t, 'GET', `/v1/runs/${parkedRunId}`)).body;
      if (run.continued_by) return runEnded(t, run.continued_by);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  it('two payments under a cooldown: one request over the WebSocket, the second refused at once; approved, the first runs', async () => {
    const id = await anAgent([{ type: 'cooldown', tool_name: 'pay', seconds: 60 }]);
    const ws = await WsClient.connect(t.baseUrl);
    sockets.push(ws);
    await ws.subscribe([id]);
    const { res, approval, refused } = await parkTurn(
      id,
      [
        { id: 'call_pay_1', name: 'pay', arguments: { q: '1' } },
        { id: 'call_pay_2', name: 'pay', arguments: { q: '2' } },
      ],
      'call_pay_2',
    );
    expect(approval.tool_calls.map((c: any) => c.tool_call_id)).toEqual(['call_pay_1']);
    expect(refused).toMatchObject({ status: 'error' });
    expect(refused.tool_return).toContain(
      'pay is cooling down (60s between calls): its call call_pay_1 in this turn waits for consent',
    );
    const pending = (await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval;
    expect(pending.tool_calls.map((c: any) => c.tool_call_id)).toEqual(['call_pay_1']);
    await ws.sync();
    const asked = ws.ofType('consent.request').map((f) => f.request.tool_call_id);
    expect(asked).toEqual(['call_pay_1']);

    const request = ws.ofType('consent.request')[0].request;
    ws.send({ type: 'consent.decision', request_id: request.id, decision: 'approve_once' });
    expect(await continued(res.run_id)).toMatchObject({ stop_reason: 'end_turn' });
    expect(tools.calls.map((c) => c.tool_call_id)).toEqual(['call_pay_1']);
    expect((await requestsOf(id)).map((r) => [r.tool_call_id, r.status])).toEqual([
      ['call_pay_1', 'approved'],
    ]);
    // the model saw the refusal of its second call beside the first call's result
    const toolMsgs = fake.requests.at(-1)!.messages.filter((m: any) => m.role === 'tool');
    expect(toolMsgs.map((m: any) => m.tool_call_id)).toEqual(['call_pay_1', 'call_pay_2']);
  });

  it("identical payments (the default dedupe of a side-effecting tool): Letta's in-band approval names the first only; its grant approves nothing else", async () => {
    const id = await anAgent([]);
    const { res, approval, refused } = await parkTurn(
      id,
      [
        { id: 'call_same_1', name: 'pay', arguments: { q: '5' } },
        { id: 'call_same_2', name: 'pay', arguments: { q: '5' } },
      ],
      'call_same_2',
    );
    expect(approval.tool_calls.map((c: any) => c.tool_call_id)).toEqual(['call_same_1']);
    expect(refused.tool_return).toContain(
      '[ToolDeduplicated] pay was already called with these arguments in this turn (call call_same_1, waiting for consent',
    );
    const answer = await api(t, 'POST', `/v1/agents/${id}/messages`, {
      messages: [
        {
          type: 'approval',
          approvals: [
            {
              type: 'approval',
              tool_call_id: 'call_same_1',
              approve: true,
              grant: { decision: 'approve_for_duration', seconds: 600 },
            },
          ],
        },
      ],
    });
    expect(answer.status).toBe(200);
    expect(answer.body.stop_reason.stop_reason).toBe('end_turn');
    expect(answer.body.run_id).not.toBe(res.run_id);
    expect(tools.calls.map((c) => c.tool_call_id)).toEqual(['call_same_1']);
    expect((await requestsOf(id)).map((r) => r.tool_call_id)).toEqual(['call_same_1']);
  });

  it('the first one denied over REST: neither runs, and no one is asked about the second (fails closed)', async () => {
    const id = await anAgent([{ type: 'cooldown', tool_name: 'pay', seconds: 60 }]);
    const { res } = await parkTurn(
      id,
      [
        { id: 'call_no_1', name: 'pay', arguments: { q: '1' } },
        { id: 'call_no_2', name: 'pay', arguments: { q: '2' } },
      ],
      'call_no_2',
    );
    const [request] = await requestsOf(id);
    const d = await api(t, 'POST', `/v1/consent/requests/${request.id}/decision`, {
      decision: 'deny',
      reason: 'not today',
    });
    expect(d.status).toBe(200);
    expect(await continued(res.run_id)).toMatchObject({ stop_reason: 'end_turn' });
    expect(tools.calls).toEqual([]);
    expect((await requestsOf(id)).map((r) => [r.tool_call_id, r.status])).toEqual([
      ['call_no_1', 'denied'],
    ]);
  });

  it('a standing grant covers the later call: it does not run ahead of the waiting one, whose approval is not wasted', async () => {
    // lookup shares the scope: approving it for the scope, within a constraint, grants small payments
    const id = await anAgent([
      { type: 'requires_approval', tool_name: 'lookup', scope: 'money' },
      { type: 'cooldown', tool_name: 'pay', seconds: 60 },
    ]);
    fake.push({ tool_calls: [{ id: 'call_look', name: 'lookup', arguments: { q: 'x' } }] });
    const looked = (await api(t, 'POST', `/v1/agents/${id}/messages`, say('look'))).body;
    const [first] = await requestsOf(id);
    fake.push({ content: 'looked' });
    const grant = await api(t, 'POST', `/v1/consent/requests/${first.id}/decision`, {
      decision: 'approve_for_scope',
      constraint: { type: 'object', properties: { q: { type: 'string', maxLength: 1 } } },
    });
    expect(grant.body.grant).toMatchObject({ scope: 'money' });
    await continued(looked.run_id);

    const { res, approval, refused } = await parkTurn(
      id,
      [
        { id: 'call_big', name: 'pay', arguments: { q: '500' } },
        { id: 'call_small', name: 'pay', arguments: { q: '5' } },
      ],
      'call_small',
    );
    expect(approval.tool_calls.map((c: any) => c.tool_call_id)).toEqual(['call_big']);
    expect(refused.tool_return).toContain('its call call_big in this turn waits for consent');
    expect(tools.calls.map((c) => c.tool_call_id)).toEqual(['call_look']);
    const big = (await requestsOf(id)).find((r) => r.tool_call_id === 'call_big');
    await api(t, 'POST', `/v1/consent/requests/${big.id}/decision`, { decision: 'approve_once' });
    expect(await continued(res.run_id)).toMatchObject({ stop_reason: 'end_turn' });
    expect(tools.calls.map((c) => c.tool_call_id)).toEqual(['call_look', 'call_big']);
  });
  /** An agent whose tools each need consent (scope: the tool), with these ordering rules. */
  const orderedAgent = (tools: string[], consent: string[], rules: any[]) =>
    createAgent(t, fake, {
      tools,
      tool_rules: [
        ...consent.map((name) => ({ type: 'requires_approval', tool_name: name })),
        ...rules,
      ],
      include_base_tools: false,
    });

  it('constrain_child_tools: right after draft only send; publish and send are held while draft waits (asked over the WebSocket, approved in band); then publish is refused after draft, and send asked about and run', async () => {
    const id = await orderedAgent(
      ['draft', 'send', 'publish'],
      ['draft', 'send', 'publish'],
      [{ type: 'constrain_child_tools', tool_name: 'draft', children: ['send'] }],
    );
    const ws = await WsClient.connect(t.baseUrl);
    sockets.push(ws);
    await ws.subscribe([id]);
    const { res, approval } = await parkTurn(
      id,
      [
        { id: 'call_draft', name: 'draft', arguments: { q: 'hello' } },
        { id: 'call_publish', name: 'publish', arguments: { q: 'hello' } },
        { id: 'call_send', name: 'send', arguments: { q: 'hello' } },
      ],
      'call_publish',
    );
    // only draft is asked about; the held calls are shown as made, with no return yet
    expect(approval.tool_calls.map((c: any) => c.tool_call_id)).toEqual(['call_draft']);
    expect(heldIn({ body: res })).toEqual(['call_publish', 'call_send']);
    await ws.sync();
    expect(ws.ofType('consent.request').map((f) => f.request.tool_call_id)).toEqual(['call_draft']);
    expect(tools.calls).toEqual([]);
    // a held call takes no answer: the approvals must answer the pending request
    const early = await api(
      t,
      'POST',
      `/v1/agents/${id}/messages`,
      approveInBand(['call_draft', 'call_send']),
    );
    expect(early.status).toBe(400);
    expect(early.body.code).toBe('APPROVAL_MISMATCH');

    const answer = await api(t, 'POST', `/v1/agents/${id}/messages`, approveInBand(['call_draft']));
    expect(answer.status).toBe(200);
    // draft ran; publish, judged right after it, is refused; send may follow it and is asked about
    expect(answer.body.stop_reason.stop_reason).toBe('requires_approval');
    const returns = answer.body.messages.filter(
      (m: any) => m.message_type === 'tool_return_message',
    );
    expect(returns.map((m: any) => [m.tool_call_id, m.status])).toEqual([
      ['call_draft', 'success'],
      ['call_publish', 'error'],
    ]);
    expect(returns[1].tool_return).toBe(
      '[ToolRuleViolation] right after draft only send may run, not publish; allowed now: send',
    );
    expect(answer.body.messages.at(-1)).toMatchObject({ message_type: 'approval_request_message' });
    expect(answer.body.messages.at(-1).tool_calls.map((c: any) => c.tool_call_id)).toEqual([
      'call_send',
    ]);
    expect(tools.calls.map((c) => c.tool_call_id)).toEqual(['call_draft']);

    const last = await api(t, 'POST', `/v1/agents/${id}/messages`, approveInBand(['call_send']));
    expect(last.body.stop_reason.stop_reason).toBe('end_turn');
    // as without consent: draft, then its child; publish never ran and no one was asked about it
    expect(tools.calls.map((c) => c.tool_call_id)).toEqual(['call_draft', 'call_send']);
    expect((await requestsOf(id)).map((r) => [r.tool_call_id, r.status])).toEqual([
      ['call_draft', 'approved'],
      ['call_send', 'approved'],
    ]);
    const toolMsgs = fake.requests.at(-1)!.messages.filter((m: any) => m.role === 'tool');
    expect(toolMsgs.map((m: any) => m.tool_call_id)).toEqual([
      'call_draft',
      'call_publish',
      'call_send',
    ]);
  });

  it("conditional: the call after check waits on check's output, so it is held; approved over REST, check runs, its output refuses pay and picks what the model is offered next", async () => {
    tools.handle('check', () => ({ body: 'hold' }));
    const id = await orderedAgent(
      ['check', 'pay', 'lookup'],
      ['check', 'pay'],
      [
        {
          type: 'conditional',
          tool_name: 'check',
          child_output_mapping: { ok: 'pay', hold: 'lookup' },
        },
      ],
    );
    fake.push(
      {
        tool_calls: [
          { id: 'call_check', name: 'check', arguments: { q: 'order 7' } },
          { id: 'call_pay', name: 'pay', arguments: { q: '70' } },
        ],
      },
      { tool_calls: [{ id: 'call_look', name: 'lookup', arguments: { q: 'order 7' } }] },
      { content: 'done' },
    );
    const res = (await api(t, 'POST', `/v1/agents/${id}/messages`, say('pay order 7'))).body;
    expect(res.stop_reason.stop_reason).toBe('requires_approval');
    const approval = res.messages.find((m: any) => m.message_type === 'approval_request_message');
    expect(approval.tool_calls.map((c: any) => c.tool_call_id)).toEqual(['call_check']);
    expect(heldIn({ body: res })).toEqual(['call_pay']);
    const [request] = await requestsOf(id);
    expect(request.tool_call_id).toBe('call_check');
    const d = await api(t, 'POST', `/v1/consent/requests/${request.id}/decision`, {
      decision: 'approve_once',
    });
    expect(d.status).toBe(200);
    expect(await continued(res.run_id)).toMatchObject({ stop_reason: 'end_turn' });
    // pay, judged once check had answered "hold", is refused with the rule's usual text
    const payReturn = fake.requests[1].messages.find(
      (m: any) => m.role === 'tool' && m.tool_call_id === 'call_pay',
    );
    expect(payReturn.content).toContain(
      '[ToolRuleViolation] the output of check selects lookup as the next tool, not pay',
    );
    // check answered "hold": the next model call was offered lookup only, and forced to it
    expect(fake.requests[1].toolNames).toEqual(['lookup']);
    expect(tools.calls.map((c) => c.tool_call_id)).toEqual(['call_check', 'call_look']);
    expect((await requestsOf(id)).map((r) => r.tool_call_id)).toEqual(['call_check']);
  });

  it.each([
    [
      'approved: draft runs, then send right after it',
      'approve_once',
      ['call_d', 'call_s'],
      'success',
    ],
    ['denied: send is judged as if draft had not run, and refused', 'deny', [], 'error'],
  ])(
    'parent_last_tool draft → [send]: send needs no consent and is held behind its waiting parent; %s',
    async (_s, decision, ran, sendStatus) => {
      const id = await orderedAgent(
        ['draft', 'send'],
        ['draft'],
        [{ type: 'parent_last_tool', tool_name: 'draft', children: ['send'] }],
      );
      const { res, approval } = await parkTurn(
        id,
        [
          { id: 'call_d', name: 'draft', arguments: { q: 'x' } },
          { id: 'call_s', name: 'send', arguments: { q: 'x' } },
        ],
        'call_s',
      );
      expect(approval.tool_calls.map((c: any) => c.tool_call_id)).toEqual(['call_d']);
      expect(heldIn({ body: res })).toEqual(['call_s']);
      expect(tools.calls).toEqual([]);
      const [request] = await requestsOf(id);
      await api(t, 'POST', `/v1/consent/requests/${request.id}/decision`, {
        decision,
        reason: 'no drafts today',
      });
      expect(await continued(res.run_id)).toMatchObject({ stop_reason: 'end_turn' });
      expect(tools.calls.map((c) => c.tool_call_id)).toEqual(ran);
      const sent = fake.requests[1].messages.find(
        (m: any) => m.role === 'tool' && m.tool_call_id === 'call_s',
      );
      if (sendStatus === 'error')
        expect(sent.content).toContain('[ToolRuleViolation] send may run only right after draft');
      else expect(sent.content).not.toContain('[Tool');
      // the run that continued answers what happened, and a restart of the list tells the same
      const msgs = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&limit=50`))
        .body as any[];
      const sendReturns = msgs.filter(
        (m) => m.message_type === 'tool_return_message' && m.tool_call_id === 'call_s',
      );
      expect(sendReturns.map((m) => m.status)).toEqual([sendStatus]);
    },
  );
  it('a cancel of the parked batch: the waiting call is denied, the call held behind it was never judged and is cancelled (history, the run’s messages, its stream, the model)', async () => {
    const id = await orderedAgent(
      ['draft', 'send'],
      ['draft'],
      [{ type: 'parent_last_tool', tool_name: 'draft', children: ['send'] }],
    );
    const { res } = await parkTurn(
      id,
      [
        { id: 'call_d', name: 'draft', arguments: { q: 'x' } },
        { id: 'call_s', name: 'send', arguments: { q: 'x' } },
      ],
      'call_s',
    );
    expect(heldIn({ body: res })).toEqual(['call_s']);
    const cancel = await api(t, 'POST', `/v1/agents/${id}/messages/cancel`, {});
    expect(cancel.body).toEqual({ [res.run_id]: 'cancelled' });
    const cont = await continued(res.run_id);
    expect(cont).toMatchObject({ status: 'cancelled', stop_reason: 'cancelled' });
    expect(tools.calls).toEqual([]);

    const held =
      '[ToolCancelled] send was not run: the run was cancelled before it was judged (it was held behind a call that waited)';
    const returnsIn = (messages: any[]) =>
      messages
        .filter((m) => m.message_type === 'tool_return_message')
        .map((m) => [m.tool_call_id, m.status, m.tool_return]);
    const expected = [
      ['call_d', 'error', '[PermissionDenied] draft was not run: cancelled by the user'],
      ['call_s', 'error', held],
    ];
    const history = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&limit=50`)).body;
    expect(returnsIn(history)).toEqual(expected);
    const runMessages = (await api(t, 'GET', `/v1/runs/${cont.id}/messages`)).body;
    expect(returnsIn(runMessages)).toEqual(expected);
    const stream = await api(t, 'POST', `/v1/runs/${cont.id}/stream`, {});
    const frames = String(stream.body)
      .split('\n\n')
      .map((f) => f.replace(/^data: /, ''))
      .filter((f) => f.startsWith('{'))
      .map((f) => JSON.parse(f));
    expect(returnsIn(frames)).toEqual(expected);
    // the next model request carries the turn with these returns
    fake.push({ content: 'ok' });
    await api(t, 'POST', `/v1/agents/${id}/messages`, say('again'));
    const toolMsgs = fake.requests.at(-1)!.messages.filter((m: any) => m.role === 'tool');
    expect(toolMsgs.map((m: any) => [m.tool_call_id, m.content])).toEqual([
      ['call_d', expected[0][2]],
      ['call_s', held],
    ]);
  });
});
