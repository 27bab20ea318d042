/* eslint-disable @typescript-eslint/no-explicit-any -- frames and response bodies are free-form JSON that tests inspect */
import { startApp, TestApp } from '../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../support/fake-model-server';
import { api, broker, fakeClock, startToolServer, WsClient } from './consent-helpers';

/**
 * Consent outcomes of issue 5 and the seed design (003, "Permission Model"), as a person drives them over
 * REST and the WebSocket: the expiry an agent sets, what a denial or a timeout leaves behind (nothing: the
 * next call asks again), a grant's reach (its agent only), and what a standing grant records when it covers
 * a call. Rows that consent-flow.e2e-spec.ts already proves (approve once / for a duration / for a scope,
 * constraints, deny, timeout) are not repeated here.
 */
describe('consent outcomes and their reach, end to end', () => {
  let t: TestApp;
  let fake: FakeModelServer;
  let toolServer: Awaited<ReturnType<typeof startToolServer>>;
  const sockets: WsClient[] = [];

  beforeAll(async () => {
    fake = await startFakeModelServer();
    toolServer = await startToolServer();
    // a global consent timeout other than the default, so the agent's own and the config's are told apart
    t = await startApp({
      modelBaseUrl: fake.baseUrl,
      overrides: { tool_executor: { consent_timeout_seconds: 120 } },
    });
    const res = await api(t, 'POST', '/v1/tools/', {
      name: 'pay',
      description: 'pays',
      safety: 'side_effecting',
      kind: 'http',
      parameters: { type: 'object', properties: { amount: { type: 'number' } } },
      http: { url: `${toolServer.url}/pay`, method: 'POST', timeout_ms: 5000 },
    });
    expect(res.status).toBe(200);
  });
  beforeEach(() => {
    fake.reset();
    toolServer.calls.length = 0;
  });
  afterEach(async () => {
    await Promise.all(sockets.splice(0).map((s) => s.close()));
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
    await toolServer.close();
  });

  /** Each agent's system prompt carries its own key, so the model's turns are queued per agent. */
  const keys = new Map<string, string>();
  async function anAgent(over: Record<string, unknown> = {}): Promise<string> {
    const key = `consent-${Math.random().toString(36).slice(2)}`;
    const res = await api(t, 'POST', '/v1/agents/', {
      name: key,
      system: `You pay bills (${key}).`,
      tools: ['pay'],
      include_base_tools: false,
      tool_rules: [{ type: 'requires_consent', tool_name: 'pay' }],
      llm_config: {
        model: 'fake',
        model_endpoint_type: 'openai',
        model_endpoint: fake.baseUrl,
        context_window: 8000,
      },
      ...over,
    });
    expect(res.status).toBe(200);
    keys.set(res.body.id, key);
    return res.body.id as string;
  }
  async function subscriber(agentIds: string[]): Promise<WsClient> {
    const ws = await WsClient.connect(t.baseUrl);
    sockets.push(ws);
    await ws.subscribe(agentIds);
    return ws;
  }
  /** The agent's model pays `amount` (each user message its own call id), then says `after`. */
  const pays = (agentId: string, amount: number, id: string, after = 'done') =>
    fake.push([{ tool_calls: [{ name: 'pay', arguments: { amount }, id }] }, { content: after }], {
      key: keys.get(agentId)!,
    });
  const send = async (agentId: string, text: string) => {
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, {
      messages: [{ role: 'user', content: text }],
    });
    expect(res.status).toBe(200);
    return res.body;
  };
  const requestFor = (ws: WsClient, toolCallId: string) =>
    ws.next((f) => f.type === 'consent.request' && f.request.tool_call_id === toolCallId);
  /** Waits until the batch the parked run left continued in a run of its own, and that run ended. */
  const continuationDone = async (parkedRunId: string) => {
    for (;;) {
      const parked = (await api(t, 'GET', `/v1/runs/${parkedRunId}`)).body;
      if (parked.continued_by) {
        const next = (await api(t, 'GET', `/v1/runs/${parked.continued_by}`)).body;
        if (['completed', 'failed', 'cancelled'].includes(next.status)) return next;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const paid = () => toolServer.calls.map((c) => c.body.arguments.amount);

  it("an agent's tool_executor.consent_timeout_seconds sets the request's expiry (the config's applies without it); the request times out there, not before", async () => {
    const own = await anAgent({ tool_executor: { consent_timeout_seconds: 45 } });
    const byConfig = await anAgent();
    const ws = await subscriber([own, byConfig]);
    pays(own, 1, 'call_own', 'gave up');
    expect((await send(own, 'pay')).stop_reason.stop_reason).toBe('requires_approval');
    pays(byConfig, 2, 'call_cfg', 'gave up');
    expect((await send(byConfig, 'pay')).stop_reason.stop_reason).toBe('requires_approval');
    const mine = (await requestFor(ws, 'call_own')).request;
    const theirs = (await requestFor(ws, 'call_cfg')).request;
    expect(Date.parse(mine.expires_at) - Date.parse(mine.created_at)).toBe(45_000);
    expect(Date.parse(theirs.expires_at) - Date.parse(theirs.created_at)).toBe(120_000);

    const clock = fakeClock(t, Date.parse(mine.expires_at) - 1000);
    try {
      await broker(t).expireDue();
      expect((await api(t, 'GET', `/v1/consent/requests/${mine.id}`)).body.status).toBe('pending');
      clock.advance(1000);
      const from = ws.frames.length;
      await broker(t).expireDue();
      expect(
        await ws.next((f) => f.type === 'consent.resolved' && f.request_id === mine.id, from),
      ).toMatchObject({ decision: 'deny', reason: 'timeout', decided_by: 'system' });
      await continuationDone(mine.run_id);
      // the config's 120 s have not passed for the other agent's request
      expect((await api(t, 'GET', `/v1/consent/requests/${theirs.id}`)).body.status).toBe(
        'pending',
      );
    } finally {
      clock.restore();
    }
    expect(toolServer.calls).toEqual([]);
    const audit = await api(t, 'GET', `/v1/consent/audit?request_id=${mine.id}`);
    expect(audit.body.map((e: any) => e.event)).toEqual(['request.created', 'request.expired']);
    await api(t, 'POST', `/v1/consent/requests/${theirs.id}/decision`, { decision: 'deny' });
  });

  it("nobody answers: the server's own sweep denies the request at its expiry (timeout), and the batch goes on without running the tool", async () => {
    const agentId = await anAgent({ tool_executor: { consent_timeout_seconds: 1 } });
    const ws = await subscriber([agentId]);
    pays(agentId, 9, 'call_unanswered', 'nobody answered');
    const from = ws.frames.length;
    const parked = await send(agentId, 'pay');
    expect(parked.stop_reason.stop_reason).toBe('requires_approval');
    const req = (await requestFor(ws, 'call_unanswered')).request;
    expect(
      await ws.next((f) => f.type === 'consent.resolved' && f.request_id === req.id, from, 10_000),
    ).toMatchObject({
      decision: 'deny',
      reason: 'timeout',
      decided_by: 'system',
      channel: 'system',
    });
    await continuationDone(parked.run_id);
    expect(toolServer.calls).toEqual([]);
    const stored = (await api(t, 'GET', `/v1/consent/requests/${req.id}`)).body;
    expect(stored).toMatchObject({
      status: 'denied',
      decision: 'deny',
      decision_reason: 'timeout',
      decided_by: 'system',
      channel: 'system',
    });
    const history = (await api(t, 'GET', `/v1/agents/${agentId}/messages?order=asc`)).body;
    const ret = history.find(
      (m: any) => m.message_type === 'tool_return_message' && m.tool_call_id === 'call_unanswered',
    );
    expect(ret).toMatchObject({ status: 'error' });
    expect(ret.tool_return).toMatch(/^\[ToolPermissionDenied\] pay was denied: timeout/);
    expect(history.at(-1)).toMatchObject({
      message_type: 'assistant_message',
      content: 'nobody answered',
    });
  });

  it('while a request is pending every way of sending a plain message is 409 PENDING_APPROVAL, and nothing is queued', async () => {
    const agentId = await anAgent();
    const ws = await subscriber([agentId]);
    pays(agentId, 8, 'call_blocking', 'after the answer');
    await send(agentId, 'pay');
    const req = (await requestFor(ws, 'call_blocking')).request;
    const runsBefore = (await api(t, 'GET', `/v1/runs/?agent_id=${agentId}`)).body.length;
    const body = { messages: [{ role: 'user', content: 'hello?' }] };
    for (const [path, extra] of [
      ['messages', {}],
      ['messages', { streaming: true }],
      ['messages/stream', {}],
      ['messages/async', {}],
    ] as const) {
      const res = await fetch(`${t.baseUrl}/v1/agents/${agentId}/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...body, ...extra }),
      });
      expect([path, extra, res.status]).toEqual([path, extra, 409]);
      expect(await res.json()).toMatchObject({
        code: 'PENDING_APPROVAL',
        details: { request_id: req.id, tool_call_id: 'call_blocking' },
      });
    }
    expect((await api(t, 'GET', `/v1/runs/?agent_id=${agentId}`)).body).toHaveLength(runsBefore);
    await api(t, 'POST', `/v1/consent/requests/${req.id}/decision`, { decision: 'deny' });
    await continuationDone(req.run_id);
    const history = (await api(t, 'GET', `/v1/agents/${agentId}/messages?order=asc`)).body;
    expect(history.filter((m: any) => m.content === 'hello?')).toEqual([]);
  });

  it.each([
    ['a denial', 'deny'],
    ['a timeout', 'timeout'],
  ])('%s is not remembered: the identical call in the next batch asks again', async (_n, how) => {
    const agentId = await anAgent();
    const ws = await subscriber([agentId]);
    pays(agentId, 7, `call_${how}_1`, 'ok');
    await send(agentId, 'pay 7');
    const first = (await requestFor(ws, `call_${how}_1`)).request;
    if (how === 'deny') {
      ws.send({ type: 'consent.decision', request_id: first.id, decision: 'deny', reason: 'no' });
    } else {
      const clock = fakeClock(t, Date.parse(first.expires_at));
      try {
        await broker(t).expireDue();
      } finally {
        clock.restore();
      }
    }
    await continuationDone(first.run_id);

    pays(agentId, 7, `call_${how}_2`, 'ok');
    const again = await send(agentId, 'pay 7 again');
    expect(again.stop_reason.stop_reason).toBe('requires_approval');
    const second = (await requestFor(ws, `call_${how}_2`)).request;
    expect(second.id).not.toBe(first.id);
    expect(toolServer.calls).toEqual([]);
    await api(t, 'POST', `/v1/consent/requests/${second.id}/decision`, { decision: 'deny' });
  });

  it("a grant is the agent's: another agent with the same tool and scope is still asked", async () => {
    const a = await anAgent();
    const b = await anAgent();
    const ws = await subscriber([a, b]);
    pays(a, 3, 'call_a1');
    await send(a, 'pay');
    const req = (await requestFor(ws, 'call_a1')).request;
    const resolved = await ws.request(
      { type: 'consent.decision', request_id: req.id, decision: 'approve_for_scope' },
      'consent.resolved',
    );
    expect(resolved).toMatchObject({
      request_id: req.id,
      decision: 'approve_for_scope',
      grant_id: expect.stringMatching(/^grant-/),
      channel: 'ws',
    });
    await continuationDone(req.run_id);

    pays(b, 4, 'call_b1');
    expect((await send(b, 'pay')).stop_reason.stop_reason).toBe('requires_approval');
    pays(a, 5, 'call_a2');
    expect((await send(a, 'pay again')).stop_reason.stop_reason).toBe('end_turn');
    expect(paid()).toEqual([3, 5]);
    expect((await api(t, 'GET', `/v1/agents/${b}/grants`)).body).toEqual([]);
    const pending = (await requestFor(ws, 'call_b1')).request;
    await api(t, 'POST', `/v1/consent/requests/${pending.id}/decision`, { decision: 'deny' });
  });

  it("a grant's constraint judges the arguments the tool gets: request_heartbeat is not one of them", async () => {
    const agentId = await anAgent();
    const ws = await subscriber([agentId]);
    pays(agentId, 10, 'call_k1');
    await send(agentId, 'pay');
    const req = (await requestFor(ws, 'call_k1')).request;
    ws.send({
      type: 'consent.decision',
      request_id: req.id,
      decision: 'approve_for_scope',
      constraint: {
        type: 'object',
        properties: { amount: { type: 'number', maximum: 100 } },
        additionalProperties: false,
      },
    });
    await continuationDone(req.run_id);
    fake.push(
      [
        { tool_calls: [{ name: 'pay', arguments: { amount: 20, request_heartbeat: true } }] },
        { content: 'paid and done' },
      ],
      { key: keys.get(agentId)! },
    );
    const covered = await send(agentId, 'pay 20');
    expect(covered.stop_reason.stop_reason).toBe('end_turn');
    expect(paid()).toEqual([10, 20]);
  });

  it('a new subscribe replaces the last one; no agent_ids follows every agent, one made later too', async () => {
    const a = await anAgent();
    const ws = await subscriber([a]);
    const everyone = await WsClient.connect(t.baseUrl);
    sockets.push(everyone);
    expect(await everyone.subscribe()).toEqual({ type: 'subscribed', agent_ids: null });
    const b = await anAgent(); // made after the subscribe
    expect(await ws.subscribe([b])).toEqual({ type: 'subscribed', agent_ids: [b] });

    pays(a, 1, 'call_sub_a');
    await send(a, 'pay');
    pays(b, 2, 'call_sub_b');
    await send(b, 'pay');
    await requestFor(ws, 'call_sub_b');
    await requestFor(everyone, 'call_sub_a');
    await requestFor(everyone, 'call_sub_b');
    await ws.sync();
    expect(ws.ofType('consent.request').map((f) => f.request.tool_call_id)).toEqual(['call_sub_b']);
    for (const r of (await api(t, 'GET', '/v1/consent/requests')).body)
      if ([a, b].includes(r.agent_id))
        await api(t, 'POST', `/v1/consent/requests/${r.id}/decision`, { decision: 'deny' });
  });

  it('a standing grant covers the call: it runs without a request, and the audit names the grant, the run and the call', async () => {
    const agentId = await anAgent();
    const ws = await subscriber([agentId]);
    pays(agentId, 10, 'call_g1');
    await send(agentId, 'pay');
    const req = (await requestFor(ws, 'call_g1')).request;
    const resolved = await ws.request(
      {
        type: 'consent.decision',
        request_id: req.id,
        decision: 'approve_for_duration',
        seconds: 600,
      },
      'consent.resolved',
    );
    await continuationDone(req.run_id);
    const grants = (await api(t, 'GET', `/v1/agents/${agentId}/grants`)).body;
    expect(grants).toEqual([
      expect.objectContaining({
        id: resolved.grant_id,
        agent_id: agentId,
        scope: 'pay',
        decision: 'approve_for_duration',
        revoked_at: null,
      }),
    ]);
    expect(Date.parse(grants[0].expires_at)).toBeGreaterThan(Date.now() + 500_000);

    const before = ws.ofType('consent.request').length;
    pays(agentId, 11, 'call_g2');
    const covered = await send(agentId, 'pay 11');
    expect(covered.stop_reason.stop_reason).toBe('end_turn');
    expect(paid()).toEqual([10, 11]);
    await ws.sync();
    expect(ws.ofType('consent.request')).toHaveLength(before);
    const used = (
      await api(t, 'GET', `/v1/consent/audit?agent_id=${agentId}&tool_name=pay`)
    ).body.filter((e: any) => e.event === 'grant.used');
    expect(used).toEqual([
      expect.objectContaining({
        grant_id: resolved.grant_id,
        run_id: covered.run_id,
        tool_call_id: 'call_g2',
        tool_name: 'pay',
      }),
    ]);
  });
});
