/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON */
import { rmSync } from 'node:fs';
import { startApp, TestApp } from '../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../support/fake-model-server';
import { api, startToolServer, WsClient } from './consent-helpers';

/** A parked run survives a restart: the request is pushed again, its answer resumes the batch; cancel denies. */
describe('consent end to end across a restart, racing dialogs and cancellation', () => {
  let fake: FakeModelServer;
  let toolServer: Awaited<ReturnType<typeof startToolServer>>;
  let toolUrl: string;

  beforeAll(async () => {
    fake = await startFakeModelServer();
    toolServer = await startToolServer();
    toolUrl = `${toolServer.url}/pay`;
  });
  beforeEach(() => {
    fake.reset();
    toolServer.calls.length = 0;
  });
  afterAll(async () => {
    await fake.close();
    await toolServer.close();
  });

  async function setup(t: TestApp): Promise<string> {
    await api(t, 'POST', '/v1/tools/', {
      name: 'pay',
      description: 'Pays',
      safety: 'side_effecting',
      kind: 'http',
      parameters: { type: 'object', properties: { amount: { type: 'number' } } },
      http: { url: toolUrl, method: 'POST', timeout_ms: 5000 },
    });
    const agent = await api(t, 'POST', '/v1/agents/', {
      name: `restart-${Math.random().toString(36).slice(2)}`,
      tools: ['pay'],
      tool_rules: [{ type: 'requires_approval', tool_name: 'pay' }],
      llm_config: {
        model: 'fake',
        model_endpoint_type: 'openai',
        model_endpoint: fake.baseUrl,
        context_window: 8000,
      },
    });
    expect(agent.status).toBe(200);
    return agent.body.id as string;
  }

  async function park(t: TestApp, agentId: string, id: string): Promise<void> {
    fake.reset();
    fake.push({ tool_calls: [{ name: 'pay', arguments: { amount: 3 }, id }] }, { content: 'done' });
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, {
      messages: [{ role: 'user', content: 'pay' }],
    });
    expect(res.body.stop_reason.stop_reason).toBe('requires_approval');
  }

  it('restart with a pending request: redelivered on subscribe, the answer resumes the parked batch', async () => {
    const first = await startApp({ keepDir: true, modelBaseUrl: fake.baseUrl });
    const dir = first.dir;
    try {
      const agentId = await setup(first);
      await park(first, agentId, 'call_restart');
      await first.close();

      const second = await startApp({ dir, modelBaseUrl: fake.baseUrl });
      try {
        const ws = await WsClient.connect(second.baseUrl);
        await ws.subscribe([agentId]);
        const req = (await ws.next((f) => f.type === 'consent.request')).request;
        expect(req).toMatchObject({ tool_call_id: 'call_restart', arguments: { amount: 3 } });
        const from = ws.frames.length;
        ws.send({ type: 'consent.decision', request_id: req.id, decision: 'approve_once' });
        await ws.next((f) => f.type === 'run.event' && f.event === 'run.completed', from, 10_000);
        expect(toolServer.calls.map((c) => c.body.tool_call_id)).toEqual(['call_restart']);
        await ws.close();
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('restart with a call held behind the pending one: it is kept with the parked batch, and runs right after the approved call, once', async () => {
    const first = await startApp({ keepDir: true, modelBaseUrl: fake.baseUrl });
    const dir = first.dir;
    try {
      const agentId = await setup(first);
      // a receipt needs no consent and may run only right after pay: held while pay waits
      await api(first, 'POST', '/v1/tools/', {
        name: 'receipt',
        description: 'Sends a receipt',
        safety: 'side_effecting',
        kind: 'http',
        parameters: { type: 'object', properties: { amount: { type: 'number' } } },
        http: { url: toolUrl, method: 'POST', timeout_ms: 5000 },
      });
      const updated = await api(first, 'PATCH', `/v1/agents/${agentId}`, {
        tools: ['pay', 'receipt'],
        tool_rules: [
          { type: 'requires_approval', tool_name: 'pay' },
          { type: 'parent_last_tool', tool_name: 'pay', children: ['receipt'] },
        ],
      });
      expect(updated.status).toBe(200);
      fake.reset();
      fake.push(
        {
          tool_calls: [
            { name: 'pay', arguments: { amount: 3 }, id: 'call_pay' },
            { name: 'receipt', arguments: { amount: 3 }, id: 'call_receipt' },
          ],
        },
        { content: 'done' },
      );
      const res = await api(first, 'POST', `/v1/agents/${agentId}/messages`, {
        messages: [{ role: 'user', content: 'pay' }],
      });
      expect(res.body.stop_reason.stop_reason).toBe('requires_approval');
      expect(res.body.messages.at(-1).tool_calls.map((c: any) => c.tool_call_id)).toEqual([
        'call_pay',
      ]);
      expect(toolServer.calls).toEqual([]);
      await first.close();

      const second = await startApp({ dir, modelBaseUrl: fake.baseUrl });
      try {
        const ws = await WsClient.connect(second.baseUrl);
        await ws.subscribe([agentId]);
        const req = (await ws.next((f) => f.type === 'consent.request')).request;
        expect(req).toMatchObject({ tool_call_id: 'call_pay' });
        const from = ws.frames.length;
        ws.send({ type: 'consent.decision', request_id: req.id, decision: 'approve_once' });
        await ws.next((f) => f.type === 'run.event' && f.event === 'run.completed', from, 10_000);
        expect(toolServer.calls.map((c) => c.body.tool_call_id)).toEqual([
          'call_pay',
          'call_receipt',
        ]);
        const tool = fake.requests.at(-1)!.messages.filter((m: any) => m.role === 'tool');
        expect(tool.map((m: any) => m.tool_call_id)).toEqual(['call_pay', 'call_receipt']);
        await ws.close();
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('two dialogs racing on a parked call: one wins, both close, the tool runs once', async () => {
    const t = await startApp({ modelBaseUrl: fake.baseUrl });
    try {
      const agentId = await setup(t);
      const a = await WsClient.connect(t.baseUrl);
      const b = await WsClient.connect(t.baseUrl);
      await a.subscribe([agentId]);
      await b.subscribe([agentId]);
      await park(t, agentId, 'call_race');
      const req = (await a.next((f) => f.type === 'consent.request')).request;
      await b.next((f) => f.type === 'consent.request');
      const fromA = a.frames.length;
      const fromB = b.frames.length;
      a.send({ type: 'consent.decision', request_id: req.id, decision: 'approve_once' });
      b.send({ type: 'consent.decision', request_id: req.id, decision: 'approve_once' });
      const ra = await a.next((f) => f.type === 'consent.resolved', fromA);
      const rb = await b.next((f) => f.type === 'consent.resolved', fromB);
      expect(ra).toEqual(rb);
      const errs = await Promise.race([
        a.next((f) => f.type === 'error', fromA),
        b.next((f) => f.type === 'error', fromB),
      ]);
      expect(errs).toMatchObject({ code: 'ALREADY_RESOLVED', ref: req.id });
      await a.next((f) => f.type === 'run.event' && f.event === 'run.completed', fromA, 10_000);
      expect(toolServer.calls.map((c) => c.body.tool_call_id)).toEqual(['call_race']);
      await a.close();
      await b.close();
    } finally {
      await t.close();
    }
  });

  it('cancelling a parked run denies its pending request; a late decision is ALREADY_RESOLVED', async () => {
    const t = await startApp({ modelBaseUrl: fake.baseUrl });
    try {
      const agentId = await setup(t);
      const ws = await WsClient.connect(t.baseUrl);
      await ws.subscribe([agentId]);
      await park(t, agentId, 'call_cancel');
      const req = (await ws.next((f) => f.type === 'consent.request')).request;
      const cancel = await api(t, 'POST', `/v1/agents/${agentId}/messages/cancel`, {});
      expect(cancel.status).toBe(200);
      expect(
        await ws.next((f) => f.type === 'consent.resolved' && f.request_id === req.id),
      ).toMatchObject({
        decision: 'deny',
        decided_by: 'system',
      });
      const late = await ws.request(
        { type: 'consent.decision', request_id: req.id, decision: 'approve_once' },
        'error',
      );
      expect(late).toMatchObject({ code: 'ALREADY_RESOLVED' });
      expect(toolServer.calls).toEqual([]);
      await ws.close();
    } finally {
      await t.close();
    }
  });
});
