import { MessagingService } from '../../src/processing/messaging.service';
import { ProcessingRepository } from '../../src/processing/processing.repository';
import { startApp, TestApp } from '../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../support/fake-model-server';
import { api, startToolServer, WsClient } from './consent-helpers';

/**
 * A batch that parked in this process resumes from memory on its last decision (docs/performance.md,
 * "Consent resume"): the memory must agree with the store. A decision on one of two parked calls does not
 * resume the batch; the last one does, once; a decision stored while the run is still parking, or a second
 * decision on the same call, changes nothing of that.
 */
describe('consent: resuming a batch parked in this process', () => {
  let fake: FakeModelServer;
  let tools: Awaited<ReturnType<typeof startToolServer>>;
  let t: TestApp;
  let ws: WsClient;

  let toolId: string;

  beforeAll(async () => {
    fake = await startFakeModelServer();
    tools = await startToolServer();
    t = await startApp({ modelBaseUrl: fake.baseUrl });
    const tool = await api(t, 'POST', '/v1/tools/', {
      name: 'pay',
      description: 'Pays',
      safety: 'side_effecting',
      kind: 'http',
      parameters: { type: 'object', properties: { amount: { type: 'number' } } },
      http: { url: `${tools.url}/pay`, method: 'POST', timeout_ms: 5000 },
    });
    toolId = tool.body.id as string;
    ws = await WsClient.connect(t.baseUrl);
    await ws.subscribe();
  });
  beforeEach(() => {
    fake.reset();
    tools.calls.length = 0;
  });
  afterAll(async () => {
    await ws.close();
    await t.close();
    await fake.close();
    await tools.close();
  });

  /** An agent whose next turn makes these pay calls (each needs consent), then answers "done". */
  async function agentCalling(ids: string[]): Promise<string> {
    const agent = await api(t, 'POST', '/v1/agents/', {
      name: `memory-${Math.random().toString(36).slice(2)}`,
      tools: ['pay'],
      include_base_tools: false,
      tool_rules: [{ type: 'requires_approval', tool_name: 'pay' }],
      llm_config: {
        model: 'fake',
        model_endpoint_type: 'openai',
        model_endpoint: fake.baseUrl,
        context_window: 8000,
      },
    });
    fake.push(
      { tool_calls: ids.map((id, i) => ({ name: 'pay', arguments: { amount: i + 1 }, id })) },
      { content: 'done' },
    );
    return agent.body.id as string;
  }

  const decide = (requestId: string, decision: string, reason?: string) =>
    ws.send({ type: 'consent.decision', request_id: requestId, decision, reason });

  async function requestsFor(
    agentId: string,
    n: number,
  ): Promise<{ id: string; tool_call_id: string }[]> {
    for (let i = 0; i < n; i++)
      await ws.next((f) => f.type === 'consent.request' && f.request.agent_id === agentId, 0);
    return ws
      .ofType('consent.request')
      .map((f) => f.request)
      .filter((r) => r.agent_id === agentId);
  }

  async function runsOf(
    agentId: string,
  ): Promise<{ id: string; status: string; stop_reason: string }[]> {
    return (await api(t, 'GET', `/v1/runs/?agent_id=${agentId}&order=asc`)).body;
  }

  it('two parked calls: the first decision does not resume the batch, the second resumes it once', async () => {
    const agentId = await agentCalling(['call_m1', 'call_m2']);
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, {
      messages: [{ role: 'user', content: 'pay twice' }],
    });
    expect(res.body.stop_reason.stop_reason).toBe('requires_approval');
    const [r1, r2] = await requestsFor(agentId, 2);
    const from = ws.frames.length;
    decide(r1.id, 'approve_once');
    await ws.next((f) => f.type === 'consent.resolved' && f.request_id === r1.id, from);
    // (a continuation would be stored before this frame is sent, in the decision listener)
    expect(await runsOf(agentId)).toHaveLength(1);
    decide(r2.id, 'deny', 'not this one');
    await ws.next(
      (f) => f.type === 'run.event' && f.event === 'run.completed' && f.agent_id === agentId,
      from,
      10_000,
    );
    // one continuation: a resume after the first decision would have parked the second call again
    expect(await runsOf(agentId)).toMatchObject([
      { status: 'completed', stop_reason: 'requires_approval' },
      { status: 'completed', stop_reason: 'end_turn' },
    ]);
    expect(tools.calls.map((c) => c.body.tool_call_id)).toEqual([r1.tool_call_id]);
    const history = (await api(t, 'GET', `/v1/agents/${agentId}/messages?limit=50`)).body;
    const denied = history.find(
      (m: { message_type: string; tool_call_id?: string }) =>
        m.message_type === 'tool_return_message' && m.tool_call_id === r2.tool_call_id,
    );
    expect(denied.tool_return).toContain('not this one');
  });

  it('a decision stored while the run parks, and a second decision on the same call: the tool runs once', async () => {
    const agentId = await agentCalling(['call_m3']);
    const from = ws.frames.length;
    const sent = api(t, 'POST', `/v1/agents/${agentId}/messages/async`, {
      messages: [{ role: 'user', content: 'pay' }],
    });
    const req = (
      await ws.next((f) => f.type === 'consent.request' && f.request.agent_id === agentId, from)
    ).request;
    // at once, as the request is pushed (the run may not have finished parking), and again
    decide(req.id, 'approve_once');
    decide(req.id, 'approve_once');
    const err = await ws.next((f) => f.type === 'error' && f.ref === req.id, from);
    expect(err.code).toBe('ALREADY_RESOLVED');
    await sent;
    for (;;) {
      const runs = await runsOf(agentId);
      if (runs.length === 2 && runs.every((r) => r.status === 'completed')) break;
      await ws.sync();
    }
    expect(tools.calls.map((c) => c.body.tool_call_id)).toEqual(['call_m3']);
  });

  it('the last decision stores the continuation in its own transaction: it exists once the decision is answered', async () => {
    const agentId = await agentCalling(['call_m5']);
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, {
      messages: [{ role: 'user', content: 'pay' }],
    });
    expect(res.body.stop_reason.stop_reason).toBe('requires_approval');
    const [req] = await requestsFor(agentId, 1);
    const messaging = t.app.get(MessagingService);
    // held: the continuation can only come from the decision's transaction
    const held = jest
      .spyOn(messaging as unknown as { enqueue: () => void }, 'enqueue')
      .mockImplementation(() => undefined);
    try {
      const decided = await api(t, 'POST', `/v1/consent/requests/${req.id}/decision`, {
        decision: 'approve_once',
      });
      expect(decided.status).toBe(200);
      const runs = await runsOf(agentId);
      expect(runs).toMatchObject([{ status: 'completed' }, { status: 'created' }]);
      const repo = t.app.get(ProcessingRepository);
      expect((await repo.findRunById(runs[0].id))?.continued_by).toBe(runs[1].id);
      held.mockRestore();
      const from = ws.frames.length;
      messaging.enqueue((await repo.findRunById(runs[1].id))!, true);
      await ws.next(
        (f) => f.type === 'run.event' && f.event === 'run.completed' && f.agent_id === agentId,
        from,
        10_000,
      );
      expect(tools.calls.map((c) => c.body.tool_call_id)).toEqual(['call_m5']);
    } finally {
      held.mockRestore();
    }
  });

  it('a tool changed while the batch waits: the resumed call runs the tool as it is now', async () => {
    const agentId = await agentCalling(['call_m4']);
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, {
      messages: [{ role: 'user', content: 'pay' }],
    });
    expect(res.body.stop_reason.stop_reason).toBe('requires_approval');
    const [req] = await requestsFor(agentId, 1);
    const patched = await api(t, 'PATCH', `/v1/tools/${toolId}`, {
      http: { url: `${tools.url}/pay-v2`, method: 'POST', timeout_ms: 5000 },
    });
    expect(patched.status).toBe(200);
    const from = ws.frames.length;
    decide(req.id, 'approve_once');
    await ws.next(
      (f) => f.type === 'run.event' && f.event === 'run.completed' && f.agent_id === agentId,
      from,
      10_000,
    );
    expect(tools.calls.map((c) => [c.path, c.body.tool_call_id])).toEqual([['/pay-v2', 'call_m4']]);
  });
});
