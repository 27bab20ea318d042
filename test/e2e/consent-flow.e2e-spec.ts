/* eslint-disable @typescript-eslint/no-explicit-any -- frames and response bodies are free-form JSON that tests inspect */
import Letta from '@letta-ai/letta-client';
import { startApp, TestApp } from '../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../support/fake-model-server';
import { api, broker, fakeClock, startToolServer, WsClient } from './consent-helpers';

/**
 * The whole consent loop: the fake model calls a tool that needs consent, the run parks, a person answers
 * (WebSocket, REST or Letta's in-band approval) and the batch continues. The tool is an http tool served by
 * this test, so "the tool ran" means its server got the request.
 */
describe('consent end to end: model → park → decision → tool', () => {
  let t: TestApp;
  let fake: FakeModelServer;
  let client: Letta;
  let toolServer: Awaited<ReturnType<typeof startToolServer>>;
  let toolUrl: string;
  let toolCalls: { path: string | undefined; body: any }[] = [];
  const sockets: WsClient[] = [];

  beforeAll(async () => {
    fake = await startFakeModelServer();
    toolServer = await startToolServer();
    toolUrl = toolServer.url;
    toolCalls = toolServer.calls;
    t = await startApp({ modelBaseUrl: fake.baseUrl });
    client = new Letta({ baseURL: t.baseUrl, apiKey: 'none', maxRetries: 0 });
    for (const name of ['pay', 'refund', 'notify'])
      expect(
        (
          await api(t, 'POST', '/v1/tools/', {
            name,
            description: `${name} something`,
            safety: 'side_effecting',
            kind: 'http',
            parameters: { type: 'object', properties: { amount: { type: 'number' } } },
            http: { url: `${toolUrl}/${name}`, method: 'POST', timeout_ms: 5000 },
          })
        ).status,
      ).toBe(200);
  });
  beforeEach(() => {
    fake.reset();
    toolCalls.length = 0;
  });
  afterEach(async () => {
    await Promise.all(sockets.splice(0).map((s) => s.close()));
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
    await toolServer.close();
  });

  async function anAgent(
    rules: any[] = [{ type: 'requires_approval', tool_name: 'pay' }],
  ): Promise<string> {
    const res = await api(t, 'POST', '/v1/agents/', {
      name: `consent-${Math.random().toString(36).slice(2)}`,
      system: 'You pay bills.',
      tools: ['pay', 'refund', 'notify'],
      tool_rules: rules,
      llm_config: {
        model: 'fake',
        model_endpoint_type: 'openai',
        model_endpoint: fake.baseUrl,
        context_window: 8000,
      },
    });
    expect(res.status).toBe(200);
    return res.body.id as string;
  }

  async function subscriber(agentId: string): Promise<WsClient> {
    const ws = await WsClient.connect(t.baseUrl);
    sockets.push(ws);
    await ws.subscribe([agentId]);
    return ws;
  }

  const say = (agentId: string, content: string) =>
    client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content }],
    }) as Promise<any>;

  /** The model calls `tool` once; after the tool's return it answers `after`. */
  const modelCalls = (tool: string, args: Record<string, unknown>, id: string, after = 'done') => {
    // a fresh script per user message: whether the loop calls the model again after an approved tool
    // (heartbeat rules) is the processor's business, so a left-over turn must not leak into the next one
    fake.reset();
    fake.push({ tool_calls: [{ name: tool, arguments: args, id }] }, { content: after });
  };

  /** Waits for the continuation run after a decision to complete (its run.event). */
  const continuationDone = (ws: WsClient, from: number) =>
    ws.next((f) => f.type === 'run.event' && f.event === 'run.completed', from, 10_000);

  it('parks with requires_approval, pushes the request, approve_once runs the tool once; the next call asks again', async () => {
    const agentId = await anAgent();
    const ws = await subscriber(agentId);
    modelCalls('pay', { amount: 50 }, 'call_pay_1');
    const res = await say(agentId, 'pay the bill');
    expect(res.stop_reason.stop_reason).toBe('requires_approval');
    const last = res.messages.at(-1);
    expect(last.message_type).toBe('approval_request_message');
    expect(last.tool_call).toMatchObject({ name: 'pay', tool_call_id: 'call_pay_1' });
    expect(toolCalls).toEqual([]);

    const req = (await ws.next((f) => f.type === 'consent.request')).request;
    expect(req).toMatchObject({
      agent_id: agentId,
      tool_call_id: 'call_pay_1',
      tool_name: 'pay',
      arguments: { amount: 50 },
    });
    const agent = await api(t, 'GET', `/v1/agents/${agentId}`);
    expect(agent.body.last_stop_reason).toBe('requires_approval');

    // a plain message while pending: 409 as Letta does
    const blocked = await api(t, 'POST', `/v1/agents/${agentId}/messages`, {
      messages: [{ role: 'user', content: 'hello?' }],
    });
    expect(blocked).toMatchObject({
      status: 409,
      body: { code: 'PENDING_APPROVAL', details: { tool_call_id: 'call_pay_1' } },
    });

    const from = ws.frames.length;
    ws.send({ type: 'consent.decision', request_id: req.id, decision: 'approve_once' });
    await continuationDone(ws, from);
    expect(toolCalls.map((c) => c.path)).toEqual(['/pay']);
    expect(toolCalls[0].body).toMatchObject({
      arguments: { amount: 50 },
      tool_call_id: 'call_pay_1',
    });

    // approve_once is not remembered
    modelCalls('pay', { amount: 51 }, 'call_pay_2');
    const again = await say(agentId, 'and the next one');
    expect(again.stop_reason.stop_reason).toBe('requires_approval');
    expect(toolCalls).toHaveLength(1);
  });

  it('deny: the tool does not run and the model gets the person’s reason', async () => {
    const agentId = await anAgent();
    const ws = await subscriber(agentId);
    modelCalls('pay', { amount: 900 }, 'call_deny', 'understood');
    await say(agentId, 'pay a lot');
    const req = (await ws.next((f) => f.type === 'consent.request')).request;
    const from = ws.frames.length;
    ws.send({
      type: 'consent.decision',
      request_id: req.id,
      decision: 'deny',
      reason: 'over budget',
    });
    await continuationDone(ws, from);
    expect(toolCalls).toEqual([]);
    const toolMsg = fake.requests
      .at(-1)!
      .messages.find((m: any) => m.role === 'tool' && m.tool_call_id === 'call_deny');
    expect(JSON.stringify(toolMsg)).toContain('over budget');
  });

  it('timeout: denied with reason timeout, never executed', async () => {
    const agentId = await anAgent();
    const ws = await subscriber(agentId);
    modelCalls('pay', { amount: 5 }, 'call_timeout', 'ok then');
    await say(agentId, 'pay slowly');
    const req = (await ws.next((f) => f.type === 'consent.request')).request;
    const clock = fakeClock(t, Date.parse(req.expires_at));
    try {
      const from = ws.frames.length;
      await broker(t).expireDue();
      expect(
        await ws.next((f) => f.type === 'consent.resolved' && f.request_id === req.id),
      ).toMatchObject({
        decision: 'deny',
        reason: 'timeout',
        decided_by: 'system',
      });
      await continuationDone(ws, from);
    } finally {
      clock.restore();
    }
    expect(toolCalls).toEqual([]);
    const toolMsg = fake.requests
      .at(-1)!
      .messages.find((m: any) => m.role === 'tool' && m.tool_call_id === 'call_timeout');
    expect(JSON.stringify(toolMsg)).toContain('timeout');
  });

  it('approve_for_duration: covered until it expires, then asked again', async () => {
    const agentId = await anAgent();
    const ws = await subscriber(agentId);
    modelCalls('pay', { amount: 1 }, 'call_d1');
    await say(agentId, 'pay 1');
    const req = (await ws.next((f) => f.type === 'consent.request')).request;
    const from = ws.frames.length;
    ws.send({
      type: 'consent.decision',
      request_id: req.id,
      decision: 'approve_for_duration',
      seconds: 60,
    });
    await continuationDone(ws, from);

    modelCalls('pay', { amount: 2 }, 'call_d2');
    expect((await say(agentId, 'pay 2')).stop_reason.stop_reason).toBe('end_turn');
    expect(toolCalls.map((c) => c.body.arguments.amount)).toEqual([1, 2]);

    const clock = fakeClock(t, Date.now() + 61_000);
    try {
      modelCalls('pay', { amount: 3 }, 'call_d3');
      expect((await say(agentId, 'pay 3')).stop_reason.stop_reason).toBe('requires_approval');
      expect(toolCalls).toHaveLength(2);
    } finally {
      clock.restore();
    }
  });

  it('approve_for_scope: covers two tools sharing a scope until revoked', async () => {
    const agentId = await anAgent([
      { type: 'requires_approval', tool_name: 'pay', scope: 'money' },
      { type: 'requires_approval', tool_name: 'refund', scope: 'money' },
    ]);
    const ws = await subscriber(agentId);
    modelCalls('pay', { amount: 10 }, 'call_s1');
    await say(agentId, 'pay');
    const req = (await ws.next((f) => f.type === 'consent.request')).request;
    expect(req.scope).toBe('money');
    const from = ws.frames.length;
    const resolved = await ws.request(
      { type: 'consent.decision', request_id: req.id, decision: 'approve_for_scope' },
      'consent.resolved',
    );
    await continuationDone(ws, from);

    modelCalls('refund', { amount: 10 }, 'call_s2');
    expect((await say(agentId, 'refund it')).stop_reason.stop_reason).toBe('end_turn');
    expect(toolCalls.map((c) => c.path)).toEqual(['/pay', '/refund']);

    const grants = await api(t, 'GET', `/v1/agents/${agentId}/grants`);
    expect(grants.body).toEqual([
      expect.objectContaining({ id: resolved.grant_id, scope: 'money', revoked_at: null }),
    ]);
    expect((await api(t, 'DELETE', `/v1/grants/${resolved.grant_id}`)).status).toBe(200);
    modelCalls('refund', { amount: 11 }, 'call_s3');
    expect((await say(agentId, 'refund again')).stop_reason.stop_reason).toBe('requires_approval');
    expect(toolCalls).toHaveLength(2);
  });

  it('a constraint: covered within it, asked outside it', async () => {
    const agentId = await anAgent();
    const ws = await subscriber(agentId);
    modelCalls('pay', { amount: 20 }, 'call_c1');
    await say(agentId, 'pay 20');
    const req = (await ws.next((f) => f.type === 'consent.request')).request;
    const from = ws.frames.length;
    ws.send({
      type: 'consent.decision',
      request_id: req.id,
      decision: 'approve_for_scope',
      constraint: { type: 'object', properties: { amount: { type: 'number', maximum: 100 } } },
    });
    await continuationDone(ws, from);
    modelCalls('pay', { amount: 100 }, 'call_c2');
    expect((await say(agentId, 'pay 100')).stop_reason.stop_reason).toBe('end_turn');
    modelCalls('pay', { amount: 101 }, 'call_c3');
    expect((await say(agentId, 'pay 101')).stop_reason.stop_reason).toBe('requires_approval');
    expect(toolCalls.map((c) => c.body.arguments.amount)).toEqual([20, 100]);
  });

  it('the Letta in-band approval through @letta-ai/letta-client, with a REST-side grant', async () => {
    const agentId = await anAgent();
    modelCalls('pay', { amount: 7 }, 'call_inband', 'paid it');
    const parked = await say(agentId, 'pay 7');
    const approval = parked.messages.at(-1);
    expect(approval.message_type).toBe('approval_request_message');
    expect(
      ((await api(t, 'GET', `/v1/agents/${agentId}`)).body.pending_approval ?? null) !== null,
    ).toBe(true);

    // a mismatched tool_call_id is 400
    await expect(
      client.agents.messages.create(agentId, {
        messages: [
          {
            type: 'approval',
            approvals: [{ type: 'approval', tool_call_id: 'call_other', approve: true }],
          },
        ],
      } as any),
    ).rejects.toMatchObject({ status: 400 });

    const res: any = await client.agents.messages.create(agentId, {
      messages: [
        {
          type: 'approval',
          approvals: [
            {
              type: 'approval',
              tool_call_id: 'call_inband',
              approve: true,
              grant: { decision: 'approve_for_duration', seconds: 600 },
            },
          ],
        },
      ],
    } as any);
    const types = res.messages.map((m: any) => m.message_type);
    expect(types).toContain('tool_return_message');
    expect(res.messages.find((m: any) => m.message_type === 'tool_return_message')).toMatchObject({
      tool_call_id: 'call_inband',
      status: 'success',
    });
    expect(toolCalls.map((c) => c.body.arguments.amount)).toEqual([7]);
    const audit = await api(t, 'GET', `/v1/consent/audit?agent_id=${agentId}`);
    expect(audit.body.find((e: any) => e.event === 'request.decided')).toMatchObject({
      channel: 'rest',
      decision: 'approve_for_duration',
    });

    // the grant made in band covers the next call
    modelCalls('pay', { amount: 8 }, 'call_inband_2');
    expect((await say(agentId, 'pay 8')).stop_reason.stop_reason).toBe('end_turn');
    expect(toolCalls.map((c) => c.body.arguments.amount)).toEqual([7, 8]);

    // the same approval sent again (a client retrying after a network error): as Letta's, a follow-up;
    // nothing runs again
    const answer = (approve: boolean) =>
      client.agents.messages.create(agentId, {
        messages: [
          {
            type: 'approval',
            approvals: [{ type: 'approval', tool_call_id: 'call_inband', approve }],
          },
        ],
      } as any);
    fake.push({ content: 'still here' });
    expect(((await answer(true)) as any).stop_reason.stop_reason).toBe('end_turn');
    expect(toolCalls.map((c) => c.body.arguments.amount)).toEqual([7, 8]);
    // another answer than the one stored: 409 with the outcome
    await expect(answer(false)).rejects.toMatchObject({ status: 409 });
  });
});
