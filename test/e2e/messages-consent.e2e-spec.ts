/* eslint-disable @typescript-eslint/no-explicit-any */
import Letta from '@letta-ai/letta-client';
import { ToolExecutorService } from '../../src/rules/tool-executor.service';
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import {
  api,
  createAgent,
  LoopEnv,
  runEnded as waitForRun,
  say,
  startLoopEnv,
  ToolServer,
  types,
} from '../support/processing-fixtures';
import { fakeClock } from './consent-helpers';

/** Consent: the run parks with requires_approval, a decision continues the same batch in a new run. */
describe('messages: consent park and resume', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let tools: ToolServer;
  let client: Letta;

  beforeAll(async () => {
    env = await startLoopEnv([['pay', { safety: 'side_effecting' }], 'lookup']);
    ({ t, fake, tools } = env);
    client = new Letta({ baseURL: t.baseUrl, apiKey: 'none', maxRetries: 0 });
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const agent = () =>
    createAgent(t, fake, {
      tools: ['pay', 'lookup'],
      tool_rules: [{ type: 'requires_approval', tool_name: 'pay' }],
      include_base_tools: false,
    });

  async function park(id: string, amount = 5): Promise<{ res: any; toolCallId: string }> {
    fake.push({ tool_calls: [{ name: 'pay', arguments: { q: String(amount) } }] });
    const res = (await api(t, 'POST', `/v1/agents/${id}/messages`, say('pay it'))).body;
    expect(res.stop_reason.stop_reason).toBe('requires_approval');
    const last = res.messages.at(-1);
    expect(last.message_type).toBe('approval_request_message');
    expect(last.tool_call).toMatchObject({
      name: 'pay',
      arguments: JSON.stringify({ q: String(amount) }),
    });
    return { res, toolCallId: last.tool_call.tool_call_id as string };
  }

  const runEnded = (runId: string) => waitForRun(t, runId);

  /** Letta's in-band approval of one pending call; the continuation's answer. */
  const approveInBand = async (id: string, toolCallId: string): Promise<any> =>
    (
      await api(t, 'POST', `/v1/agents/${id}/messages`, {
        messages: [
          {
            type: 'approval',
            approvals: [{ type: 'approval', tool_call_id: toolCallId, approve: true }],
          },
        ],
      })
    ).body;

  it('parks: run completed/requires_approval, pending_approval on the agent, 409 for a plain message', async () => {
    const id = await agent();
    const { res, toolCallId } = await park(id);
    expect(tools.calls).toHaveLength(0);
    const run = (await api(t, 'GET', `/v1/runs/${res.run_id}`)).body;
    expect(run).toMatchObject({ status: 'completed', stop_reason: 'requires_approval' });
    const a = (await api(t, 'GET', `/v1/agents/${id}`)).body;
    expect(a.last_stop_reason).toBe('requires_approval');
    expect(a.pending_approval).toMatchObject({
      message_type: 'approval_request_message',
      tool_call: { tool_call_id: toolCallId, name: 'pay' },
    });
    const blocked = await api(t, 'POST', `/v1/agents/${id}/messages`, say('hello?'));
    expect(blocked.status).toBe(409);
    expect(blocked.body.code).toBe('PENDING_APPROVAL');
    expect(blocked.body.details.tool_call_id).toBe(toolCallId);
    expect(typeof blocked.body.details.request_id).toBe('string');
  });

  it("a parked call is shown only as its approval request (response, stream, resumed stream, history), as Letta's", async () => {
    const id = await agent();
    fake.push({
      tool_calls: [
        { id: 'call_look', name: 'lookup', arguments: { q: 'price' } },
        { id: 'call_pay', name: 'pay', arguments: { q: '5' } },
      ],
    });
    const res = await fetch(`${t.baseUrl}/v1/agents/${id}/messages/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(say('pay it')),
    });
    const frames = (await res.text())
      .split('\n\n')
      .map((f) => f.replace(/^data: /, ''))
      .filter((f) => f.startsWith('{'))
      .map((f) => JSON.parse(f));
    const shown = (ms: any[]) =>
      ms
        .filter((m) => m.message_type?.endsWith('_message') && m.message_type !== 'user_message')
        .map((m) => `${m.message_type}:${m.tool_call?.tool_call_id ?? m.tool_call_id}`);
    // the call that ran is a tool_call_message and its return; the parked one only its request
    const expected = [
      'tool_call_message:call_look',
      'tool_return_message:call_look',
      'approval_request_message:call_pay',
    ];
    expect(shown(frames)).toEqual(expected);
    const runId = frames[0].run_id;
    expect(shown((await api(t, 'GET', `/v1/runs/${runId}/messages`)).body)).toEqual(expected);
    const resumed = await api(t, 'POST', `/v1/runs/${runId}/stream`, {});
    const replay = String(resumed.body)
      .split('\n\n')
      .map((f) => f.replace(/^data: /, ''))
      .filter((f) => f.startsWith('{'))
      .map((f) => JSON.parse(f));
    expect(shown(replay)).toEqual(expected);
    const history = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc`)).body;
    expect(shown(history)).toEqual(expected);
    // Letta's message_ids: the shown messages in context, the approval request last (held rows left out)
    const agentNow = (await api(t, 'GET', `/v1/agents/${id}`)).body;
    expect(agentNow.message_ids).toEqual(history.map((m: any) => m.id));
    // the model still gets a well-formed turn holding both calls once approved
    fake.push({ content: 'paid' });
    await approveInBand(id, 'call_pay');
    const assistant = fake.requests.at(-1)!.messages.find((m: any) => m.role === 'assistant');
    expect(assistant.tool_calls.map((c: any) => c.id)).toEqual(['call_look', 'call_pay']);
  });

  it("parallel calls that park: one approval request lists them all (Letta's tool_calls), answered together", async () => {
    const id = await agent();
    fake.push({
      tool_calls: [
        { id: 'call_p1', name: 'pay', arguments: { q: '1' } },
        { id: 'call_p2', name: 'pay', arguments: { q: '2' } },
      ],
    });
    const parked = (await api(t, 'POST', `/v1/agents/${id}/messages`, say('pay both'))).body;
    const requests = parked.messages.filter(
      (m: any) => m.message_type === 'approval_request_message',
    );
    expect(requests).toHaveLength(1);
    expect(requests[0].tool_call.tool_call_id).toBe('call_p1');
    expect(requests[0].tool_calls.map((c: any) => c.tool_call_id)).toEqual(['call_p1', 'call_p2']);
    expect(parked.messages.at(-1)).toEqual(requests[0]);
    const pending = (await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval;
    expect(pending.tool_calls.map((c: any) => c.tool_call_id)).toEqual(['call_p1', 'call_p2']);
    // Letta Code answers the calls the last request lists
    fake.push({ content: 'paid both' });
    const res = await api(t, 'POST', `/v1/agents/${id}/messages`, {
      messages: [
        {
          type: 'approval',
          approvals: requests[0].tool_calls.map((c: any) => ({
            type: 'approval',
            tool_call_id: c.tool_call_id,
            approve: true,
          })),
        },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.stop_reason.stop_reason).toBe('end_turn');
    expect(tools.calls.map((c) => c.tool_call_id).sort()).toEqual(['call_p1', 'call_p2']);
  });

  it('in-band approval through the SDK: the tool runs and the same batch continues in a new run', async () => {
    const id = await agent();
    const { res: parked, toolCallId } = await park(id);
    fake.push({ content: 'paid' });
    const res: any = await client.agents.messages.create(id, {
      messages: [
        {
          type: 'approval',
          approvals: [{ type: 'approval', tool_call_id: toolCallId, approve: true }],
        },
      ] as any,
    });
    // the approval response is history only, as Letta's responses leave it out
    expect(types(res.messages)).toEqual(['tool_return_message', 'assistant_message']);
    expect(res.messages[0]).toMatchObject({
      tool_call_id: toolCallId,
      status: 'success',
      tool_return: 'ok:pay',
    });
    const written = (await api(t, 'GET', `/v1/runs/${res.run_id}/messages`)).body;
    // Letta's legacy fields repeat the first approval: approval_request_id is its tool_call_id
    expect(written[0]).toMatchObject({
      message_type: 'approval_response_message',
      approve: true,
      approval_request_id: toolCallId,
      approvals: [{ type: 'approval', tool_call_id: toolCallId, approve: true }],
    });
    expect(res.stop_reason.stop_reason).toBe('end_turn');
    expect(tools.calls.map((c) => c.tool_call_id)).toEqual([toolCallId]);
    expect(res.run_id).not.toBe(parked.run_id);
    const cont = (await api(t, 'GET', `/v1/runs/${res.run_id}`)).body;
    const first = (await api(t, 'GET', `/v1/runs/${parked.run_id}`)).body;
    expect(cont.batch_id).toBe(first.batch_id);
    // the model saw the call and its result
    const last = fake.requests.at(-1)!;
    expect(last.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: toolCallId });
    expect((await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval ?? null).toBeNull();
  });

  it("an approval sent again after it was processed continues, as Letta's: a keep-alive run, the tool not run twice", async () => {
    const id = await agent();
    const { toolCallId } = await park(id);
    fake.push({ content: 'paid' });
    expect((await approveInBand(id, toolCallId)).stop_reason.stop_reason).toBe('end_turn');
    fake.push({ content: 'still here' });
    const again = await approveInBand(id, toolCallId);
    expect(again.stop_reason.stop_reason).toBe('end_turn');
    expect(types(again.messages)).toEqual(['assistant_message']);
    expect(tools.calls).toHaveLength(1);
    expect(fake.requests.at(-1)!.messages.at(-1)).toMatchObject({
      role: 'user',
      content: expect.stringContaining('Automated keep-alive ping'),
    });
  });

  it('an approved call runs in the pass it was made in: ordering rules met there still hold', async () => {
    // lookup must precede pay in the pass; lookup continues the loop, so pay comes in the same pass and parks.
    const id = await createAgent(t, fake, {
      tools: ['pay', 'lookup'],
      tool_rules: [
        { type: 'requires_preceding_tools', tool_name: 'pay', tools: ['lookup'] },
        { type: 'continue_loop', tool_name: 'lookup' },
        { type: 'requires_approval', tool_name: 'pay' },
      ],
      include_base_tools: false,
    });
    fake.push(
      { tool_calls: [{ name: 'lookup', arguments: { q: 'order' } }] },
      { tool_calls: [{ name: 'pay', arguments: { q: '5' } }] },
    );
    const parked = (await api(t, 'POST', `/v1/agents/${id}/messages`, say('pay it'))).body;
    expect(parked.stop_reason.stop_reason).toBe('requires_approval');
    const toolCallId = parked.messages.at(-1).tool_call.tool_call_id as string;
    fake.push({ content: 'paid' });
    const res = await approveInBand(id, toolCallId);
    expect(res.messages[0]).toMatchObject({ tool_call_id: toolCallId, status: 'success' });
    expect(tools.calls.map((c) => c.name)).toEqual(['lookup', 'pay']);
    expect(res.stop_reason.stop_reason).toBe('end_turn');
  });

  it('a batch parked longer than batch_state_ttl_seconds keeps its counts: a max_count rule still holds after the approval', async () => {
    // keyed turns and own arguments: the clock jump also expires earlier tests' parked requests, whose
    // batches then go on beside this one
    const key = 'You are the parked-for-days agent.';
    const id = await createAgent(t, fake, {
      system: key,
      tools: ['pay', 'lookup'],
      tool_rules: [
        { type: 'requires_approval', tool_name: 'pay' },
        { type: 'max_count_per_step', tool_name: 'lookup', max_count_limit: 1 },
      ],
      include_base_tools: false,
      tool_executor: { consent_timeout_seconds: 3 * 86_400 }, // a person may answer after a weekend
    });
    const mine = () => tools.calls.filter((c) => String(c.arguments.q).startsWith('days-'));
    fake.push(
      [
        { tool_calls: [{ name: 'lookup', arguments: { q: 'days-1', request_heartbeat: true } }] },
        { tool_calls: [{ name: 'pay', arguments: { q: 'days-5' } }] },
      ],
      { key },
    );
    const parked = (await api(t, 'POST', `/v1/agents/${id}/messages`, say('pay it'))).body;
    expect(parked.stop_reason.stop_reason).toBe('requires_approval');
    const toolCallId = parked.messages.at(-1).tool_call.tool_call_id as string;

    // two days on (past the default one-day TTL), the pruning timer has run
    const clock = fakeClock(t, Date.now() + 2 * 86_400_000);
    try {
      await t.app.get(ToolExecutorService).executor.pruneExpired();
      fake.push(
        [{ tool_calls: [{ name: 'lookup', arguments: { q: 'days-2' } }] }, { content: 'paid' }],
        { key },
      );
      const res = await approveInBand(id, toolCallId);
      const returns = res.messages.filter((m: any) => m.message_type === 'tool_return_message');
      expect(returns[0]).toMatchObject({ tool_call_id: toolCallId, status: 'success' });
      expect(returns[1].tool_return).toContain('reached its limit of 1 call in this batch');
      expect(mine().map((c) => c.name)).toEqual(['lookup', 'pay']);
    } finally {
      clock.restore();
    }
  });

  it('after an approved call the batch goes on in its pass: a child rule it set names the next tool', async () => {
    const id = await createAgent(t, fake, {
      tools: ['pay', 'lookup'],
      tool_rules: [
        { type: 'requires_approval', tool_name: 'pay' },
        { type: 'constrain_child_tools', tool_name: 'pay', children: ['lookup'] },
      ],
      include_base_tools: false,
    });
    const { toolCallId } = await park(id);
    fake.push(
      { tool_calls: [{ name: 'lookup', arguments: { q: 'receipt' } }] },
      { content: 'done' },
    );
    await approveInBand(id, toolCallId);
    // the model call after the approved pay (its return, then Letta's child-rule heartbeat) was
    // offered lookup alone, forced
    const after = fake.requests.find((r: any) => r.messages.at(-2).content === 'ok:pay')!;
    expect(after.messages.at(-1).content).toContain('Continuing: child tool rule.');
    expect(after.tools.map((x: any) => x.function.name)).toEqual(['lookup']);
    expect(after.tool_choice).toMatchObject({ function: { name: 'lookup' } });
    expect(tools.calls.map((c) => c.name)).toEqual(['pay', 'lookup']);
  });

  it('an exit_loop call beside the parked one: once decided, the batch ends there (no model call)', async () => {
    const id = await createAgent(t, fake, {
      tools: ['pay', 'lookup'],
      tool_rules: [
        { type: 'requires_approval', tool_name: 'pay' },
        { type: 'exit_loop', tool_name: 'lookup' },
      ],
      include_base_tools: false,
    });
    // the turn pays (consent) and says goodbye (exit_loop); a second payment waits in the script
    fake.push(
      {
        tool_calls: [
          { name: 'pay', arguments: { q: '1' } },
          { name: 'lookup', arguments: { q: 'bye' } },
        ],
      },
      { tool_calls: [{ name: 'pay', arguments: { q: '2' } }] },
    );
    const parked = (await api(t, 'POST', `/v1/agents/${id}/messages`, say('refund'))).body;
    expect(parked.stop_reason.stop_reason).toBe('requires_approval');
    const toolCallId = parked.messages.find(
      (m: any) => m.message_type === 'approval_request_message',
    ).tool_call.tool_call_id as string;
    const requests = fake.requests.length;
    const res = await approveInBand(id, toolCallId);
    expect(types(res.messages)).toEqual(['tool_return_message']);
    expect(res.stop_reason.stop_reason).toBe('tool_rule');
    expect(fake.requests).toHaveLength(requests);
    expect(tools.calls.map((c) => `${c.name}:${String(c.arguments.q)}`)).toEqual([
      'lookup:bye',
      'pay:1',
    ]);
    expect((await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval ?? null).toBeNull();
  });

  it("denial: not executed, the person's reason reaches the model as an error return", async () => {
    const id = await agent();
    const { toolCallId } = await park(id);
    fake.push({ content: 'ok, not paying' });
    const res = await api(t, 'POST', `/v1/agents/${id}/messages`, {
      messages: [
        {
          type: 'approval',
          approvals: [
            { type: 'approval', tool_call_id: toolCallId, approve: false, reason: 'too expensive' },
          ],
        },
      ],
    });
    expect(res.status).toBe(200);
    const ret = res.body.messages.find((m: any) => m.message_type === 'tool_return_message');
    expect(ret.status).toBe('error');
    expect(ret.tool_return).toContain('too expensive');
    expect(tools.calls).toHaveLength(0);
    expect(JSON.stringify(fake.requests.at(-1)!.messages)).toContain('too expensive');
    // Letta's MemGPT loop goes on after a heartbeat naming the denial, stored after the return
    const written = (await api(t, 'GET', `/v1/runs/${res.body.run_id}/messages`)).body;
    expect(types(written)).toEqual([
      'approval_response_message',
      'tool_return_message',
      'user_message',
      'assistant_message',
    ]);
    expect(JSON.parse(written[2].content).reason).toBe(
      '[This is an automated system message hidden from the user] Continuing: user denied request to call tool.',
    );
    expect(fake.requests.at(-1)!.messages.at(-1)).toEqual({
      role: 'user',
      content: written[2].content,
    });
  });

  it('legacy approval form, and 400s for a mismatch or nothing pending', async () => {
    const id = await agent();
    const none = await api(t, 'POST', `/v1/agents/${id}/messages`, {
      messages: [{ type: 'approval', approve: true }],
    });
    expect(none.status).toBe(400);
    expect(none.body.code).toBe('NO_PENDING_APPROVAL');
    // Letta's words, which Letta Code matches on
    expect(none.body.message).toContain('No tool call is currently awaiting approval');
    const { toolCallId } = await park(id);
    const mismatch = await api(t, 'POST', `/v1/agents/${id}/messages`, {
      messages: [
        {
          type: 'approval',
          approvals: [{ type: 'approval', tool_call_id: 'call_other', approve: true }],
        },
      ],
    });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.details.pending_tool_call_ids).toEqual([toolCallId]);
    expect(mismatch.body.message).toContain(
      `Invalid tool call IDs. Expected '["${toolCallId}"]', but received '["call_other"]'`,
    );
    const requestId = (await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval.request_id;
    fake.push({ content: 'done' });
    const legacy = await api(t, 'POST', `/v1/agents/${id}/messages`, {
      messages: [{ type: 'approval', approval_request_id: requestId, approve: true }],
    });
    expect(legacy.status).toBe(200);
    expect(types(legacy.body.messages)).not.toContain('approval_response_message');
    const history = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc`)).body;
    expect(history.find((m: any) => m.message_type === 'approval_response_message')).toMatchObject({
      approve: true,
      approval_request_id: toolCallId,
    });
    expect(tools.calls).toHaveLength(1);
  });

  it('a decision over the consent REST API resumes the batch (idempotent per request)', async () => {
    const id = await agent();
    const { res: parked, toolCallId } = await park(id);
    const requestId = (await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval.request_id;
    fake.push({ content: 'continued' });
    const d = await api(t, 'POST', `/v1/consent/requests/${requestId}/decision`, {
      decision: 'approve_once',
    });
    expect(d.status).toBeLessThan(300);
    let first: any;
    for (;;) {
      first = (await api(t, 'GET', `/v1/runs/${parked.run_id}`)).body;
      if (first.continued_by) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const cont = await runEnded(first.continued_by);
    expect(cont).toMatchObject({ status: 'completed', stop_reason: 'end_turn' });
    expect(tools.calls.map((c) => c.tool_call_id)).toEqual([toolCallId]);
    // a second decision is refused; nothing runs twice
    const again = await api(t, 'POST', `/v1/consent/requests/${requestId}/decision`, {
      decision: 'approve_once',
    });
    expect(again.status).toBe(409);
    expect(tools.calls).toHaveLength(1);
  });

  it("a turn whose consent call a grant covers is shown in the model's order: its calls, then their returns", async () => {
    const id = await agent();
    const { toolCallId } = await park(id);
    const requestId = (await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval.request_id;
    fake.push({ content: 'paid' });
    await api(t, 'POST', `/v1/consent/requests/${requestId}/decision`, {
      decision: 'approve_for_scope',
    });
    for (let i = 0; i < 200 && !tools.calls.some((c) => c.tool_call_id === toolCallId); i++)
      await new Promise((r) => setTimeout(r, 10));
    fake.push(
      {
        tool_calls: [
          { name: 'pay', arguments: { q: '6' } },
          { name: 'lookup', arguments: { q: 'x' } },
        ],
      },
      { content: 'both done' },
    );
    const res = (await api(t, 'POST', `/v1/agents/${id}/messages`, say('pay and look'))).body;
    const shown = res.messages
      .filter((m: any) => ['tool_call_message', 'tool_return_message'].includes(m.message_type))
      .map((m: any) => `${m.message_type}:${m.tool_call?.name ?? m.name}`);
    expect(shown).toEqual([
      'tool_call_message:pay',
      'tool_call_message:lookup',
      'tool_return_message:pay',
      'tool_return_message:lookup',
    ]);
  });

  it('approve_for_scope on one of three waiting requests: the grant answers the others it covers', async () => {
    const id = await agent();
    fake.push({
      tool_calls: [
        { name: 'pay', arguments: { q: '1' } },
        { name: 'pay', arguments: { q: '2' } },
        { name: 'pay', arguments: { q: '30' } },
      ],
    });
    const parked = (await api(t, 'POST', `/v1/agents/${id}/messages`, say('pay all'))).body;
    expect(parked.stop_reason.stop_reason).toBe('requires_approval');
    const pending = (await api(t, 'GET', '/v1/consent/requests?status=pending')).body as any[];
    const mine = pending.filter((r) => r.agent_id === id);
    expect(mine).toHaveLength(3);
    fake.push({ content: 'paid' });
    // a constraint the third call is outside of: it stays for a person
    const first = mine.find((r) => r.arguments.q === '1');
    const d = await api(t, 'POST', `/v1/consent/requests/${first.id}/decision`, {
      decision: 'approve_for_scope',
      constraint: { type: 'object', properties: { q: { type: 'string', maxLength: 1 } } },
    });
    expect(d.status).toBeLessThan(300);
    const after = (await api(t, 'GET', '/v1/consent/requests?status=pending')).body as any[];
    expect(after.filter((r) => r.agent_id === id).map((r) => r.arguments.q)).toEqual(['30']);
    const second = mine.find((r) => r.arguments.q === '2');
    const got = (await api(t, 'GET', `/v1/consent/requests/${second.id}`)).body;
    expect(got).toMatchObject({ status: 'approved', grant_id: d.body.grant.id });
    expect(tools.calls).toHaveLength(0); // the batch waits for the third
    const third = mine.find((r) => r.arguments.q === '30');
    await api(t, 'POST', `/v1/consent/requests/${third.id}/decision`, { decision: 'deny' });
    let run: any;
    for (;;) {
      run = (await api(t, 'GET', `/v1/runs/${parked.run_id}`)).body;
      if (run.continued_by) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    await runEnded(run.continued_by);
    expect(tools.calls.map((c) => c.arguments.q).sort()).toEqual(['1', '2']);
  });

  it('deleting a parked agent denies its pending request; the tool never runs', async () => {
    const id = await agent();
    const { toolCallId } = await park(id);
    expect((await api(t, 'DELETE', `/v1/agents/${id}`)).status).toBe(200);
    const requests = (await api(t, 'GET', '/v1/consent/requests?status=all')).body;
    const mine = requests.find((r: any) => r.tool_call_id === toolCallId);
    expect(mine).toMatchObject({ status: 'denied', decision_reason: 'cancelled' });
    const pending = (await api(t, 'GET', '/v1/consent/requests?status=pending')).body;
    expect(pending.filter((r: any) => r.agent_id === id)).toEqual([]);
    expect((await api(t, 'GET', `/v1/agents/${id}`)).status).toBe(404);
    expect(tools.calls).toHaveLength(0);
  });

  it('cancelling while pending denies the call; the agent is free again', async () => {
    const id = await agent();
    const { res: parked, toolCallId } = await park(id);
    const c = await api(t, 'POST', `/v1/agents/${id}/messages/cancel`, {});
    expect(c.status).toBe(200);
    expect(c.body[parked.run_id]).toBe('cancelled');
    const first = (await api(t, 'GET', `/v1/runs/${parked.run_id}`)).body;
    const cont = await runEnded(first.continued_by);
    expect(cont.stop_reason).toBe('cancelled');
    const msgs = (await api(t, 'GET', `/v1/runs/${cont.id}/messages`)).body;
    expect(msgs[0]).toMatchObject({
      message_type: 'tool_return_message',
      tool_call_id: toolCallId,
      status: 'error',
    });
    expect(tools.calls).toHaveLength(0);
    fake.push({ content: 'free' });
    const next = await api(t, 'POST', `/v1/agents/${id}/messages`, say('hello'));
    expect(next.status).toBe(200);
    expect(next.body.stop_reason.stop_reason).toBe('end_turn');
  });
  it('a message accepted before the batch ahead of it parked waits for that batch to end (one batch at a time)', async () => {
    const id = await agent();
    fake.push({ tool_calls: [{ name: 'pay', arguments: { q: '7' } }], delayMs: 300 });
    const first = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('pay it'))).body;
    const second = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('and then?'))).body;
    expect(await runEnded(first.id)).toMatchObject({ stop_reason: 'requires_approval' });
    await new Promise((r) => setTimeout(r, 200));
    expect((await api(t, 'GET', `/v1/runs/${second.id}`)).body.status).toBe('created');

    const requestId = (await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval.request_id;
    fake.push({ content: 'paid' });
    fake.push({ content: 'second answer' });
    await api(t, 'POST', `/v1/consent/requests/${requestId}/decision`, {
      decision: 'approve_once',
    });
    expect(await runEnded(second.id)).toMatchObject({
      status: 'completed',
      stop_reason: 'end_turn',
    });
    // the first batch whole (its payment's return and answer), then the second
    const history = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&limit=50`)).body;
    const said = history
      .filter((m: any) =>
        ['user_message', 'assistant_message', 'tool_return_message'].includes(m.message_type),
      )
      .map((m: any) => m.content ?? m.tool_return);
    expect(said).toEqual(['pay it', 'ok:pay', 'paid', 'and then?', 'second answer']);
    expect(tools.calls).toHaveLength(1);
  });
});
