/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { startApp, TestApp } from '../../support/app-harness';
import { api, startToolServer } from '../consent-helpers';

/**
 * Issue 8 items 12 and 13: `"*"` rules (documented, implemented, yet refused at validation), and Letta's
 * legacy approval form, which names the approval_request_message (refused with APPROVAL_MISMATCH), while an
 * approval with an empty tool_call_id resolved whatever was pending.
 */
describe('security: "*" rules and the approval forms', () => {
  let t: TestApp;
  let tools: Awaited<ReturnType<typeof startToolServer>>;

  beforeAll(async () => {
    tools = await startToolServer();
    t = await startApp();
    for (const [name, safety] of [
      ['lookup', 'read_only'],
      ['pay', 'side_effecting'],
    ])
      expect(
        (
          await api(t, 'POST', '/v1/tools/', {
            name,
            safety,
            kind: 'http',
            parameters: { type: 'object', properties: { q: { type: 'string' } } },
            http: { url: `${tools.url}/${name}`, method: 'POST', timeout_ms: 5000 },
          })
        ).status,
      ).toBe(200);
  });
  beforeEach(() => {
    tools.calls.length = 0;
  });
  afterAll(async () => {
    await t.close();
    await tools.close();
  });

  const agent = async (tool_rules: any[], calls: { name: string; arguments: any }[]) => {
    const res = await api(t, 'POST', '/v1/agents/', {
      tools: ['lookup', 'pay'],
      tool_rules,
      model_script: [{ tool_calls: calls }],
    });
    return res;
  };
  const send = (id: string, messages: any[] = [{ role: 'user', content: 'go' }]) =>
    api(t, 'POST', `/v1/agents/${id}/messages`, { messages });
  const returns = (res: { body: any }) =>
    res.body.messages
      .filter((m: any) => m.message_type === 'tool_return_message')
      .map((m: any) => m.tool_return as string);

  it('max_count_per_step with tool_name "*" is accepted and limits each tool', async () => {
    const created = await agent(
      [{ type: 'max_count_per_step', tool_name: '*', max_count_limit: 2 }],
      ['a', 'b', 'c'].map((q) => ({ name: 'lookup', arguments: { q } })),
    );
    expect(created.status).toBe(200);
    const res = await send(created.body.id);
    expect(returns(res)[2]).toMatch(/lookup reached its limit of 2 calls/);
    expect(tools.calls).toHaveLength(2);
  });

  it('dedupe with tool_name "*" is accepted and refuses an identical call', async () => {
    const created = await agent(
      [{ type: 'dedupe', tool_name: '*', window_seconds: 60, mode: 'reject' }],
      [{ name: 'lookup', arguments: { q: 'same' } }],
    );
    expect(created.status).toBe(200);
    await send(created.body.id);
    const again = await send(created.body.id);
    expect(returns(again)[0]).toMatch(/Deduplicated.*already ran with these arguments/);
    expect(tools.calls).toHaveLength(1);
  });

  it('"*" stays refused where it means nothing (a cooldown on "*")', async () => {
    const res = await agent([{ type: 'cooldown', tool_name: '*', seconds: 60 }], []);
    expect(res.status).toBe(400);
    expect(res.body.details.problems[0].path).toBe('tool_rules[0].tool_name');
  });

  const parkedAgent = async () => {
    const created = await agent(
      [{ type: 'requires_approval', tool_name: 'pay' }],
      [{ name: 'pay', arguments: { q: 'A-1' } }],
    );
    const parked = await send(created.body.id);
    expect(parked.body.stop_reason).toMatchObject({ stop_reason: 'requires_approval' });
    return created.body.id as string;
  };

  it("the legacy form {approval_request_id: agent.pending_approval.id, approve} approves (Letta's meaning)", async () => {
    const id = await parkedAgent();
    const pending = (await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval;
    expect(pending.message_type).toBe('approval_request_message');
    const res = await send(id, [
      { type: 'approval', approval_request_id: pending.id, approve: true },
    ]);
    expect(res.status).toBe(200);
    expect(tools.calls).toHaveLength(1);
    expect((await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval).toBeNull();
  });

  it('the legacy form with an id of nothing pending: 400 APPROVAL_MISMATCH naming the right id', async () => {
    const id = await parkedAgent();
    const pending = (await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval;
    const res = await send(id, [
      {
        type: 'approval',
        approval_request_id: 'message-00000000-0000-4000-8000-000000000000',
        approve: true,
      },
    ]);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'APPROVAL_MISMATCH',
      details: { approval_request_id: pending.id },
    });
    expect(res.body.message).toContain('Invalid tool call IDs');
    expect(tools.calls).toHaveLength(0);
  });

  it('an approval with tool_call_id "" is a 400 and resolves nothing', async () => {
    const id = await parkedAgent();
    const res = await send(id, [
      { type: 'approval', approvals: [{ type: 'approval', tool_call_id: '', approve: true }] },
    ]);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'VALIDATION_FAILED', message: expect.any(String) });
    expect(res.body.details.problems[0].path).toBe('messages[0].approvals[0]');
    expect(tools.calls).toHaveLength(0);
    expect((await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval).not.toBeNull();
  });
});
