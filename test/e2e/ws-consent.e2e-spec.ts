/* eslint-disable @typescript-eslint/no-explicit-any -- frames and response bodies are free-form JSON that tests inspect */
import { startApp, TestApp } from '../support/app-harness';
import { aCheck, api, broker, newAgentId, port, WsClient } from './consent-helpers';

const KEYS = {
  auth: {
    api_keys: [
      { key: 'sk-a', tenant: 'team-a' },
      { key: 'sk-b', tenant: 'team-b' },
    ],
  },
};

describe('consent WebSocket /v1/ws', () => {
  let t: TestApp;
  const clients: WsClient[] = [];
  const connect = async (key: string, query = false) => {
    const c = await WsClient.connect(t.baseUrl, { key, query });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    t = await startApp({ overrides: KEYS });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await t.close();
  });

  describe('authentication', () => {
    it.each([
      ['no key', undefined, false],
      ['a wrong key in the header', 'sk-wrong', false],
      ['a wrong key in ?token=', 'sk-wrong', true],
    ])('refuses the upgrade with 401 for %s', async (_name, key, query) => {
      await expect(WsClient.connect(t.baseUrl, { key, query })).rejects.toThrow('HTTP 401');
    });

    it.each([
      ['the Authorization header', false],
      ['?token=', true],
    ])('accepts a valid key in %s', async (_name, query) => {
      const c = await connect('sk-a', query);
      expect(await c.request({ type: 'ping' }, 'pong')).toEqual({ type: 'pong' });
    });

    it('a path other than /v1/ws gets no socket', async () => {
      const ws = new (await import('ws')).default(t.baseUrl.replace('http', 'ws') + '/v1/other', {
        headers: { Authorization: 'Bearer sk-a' },
      });
      await expect(
        new Promise((resolve, reject) => {
          ws.once('open', resolve);
          ws.once('error', reject);
        }),
      ).rejects.toBeDefined();
    });
  });

  describe('frames', () => {
    it('subscribe answers subscribed with the agent ids (null = every agent)', async () => {
      const c = await connect('sk-a');
      expect(await c.subscribe()).toEqual({ type: 'subscribed', agent_ids: null });
      const id = newAgentId();
      expect(await c.subscribe([id])).toEqual({ type: 'subscribed', agent_ids: [id] });
    });

    it.each([
      ['not JSON', '{nope', 'MALFORMED_FRAME'],
      ['a JSON array', '[1,2]', 'MALFORMED_FRAME'],
      ['a JSON string', '"hi"', 'MALFORMED_FRAME'],
      [
        'nested past server.json_max_depth (as a body would be)',
        `{"type":"ping","x":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`,
        'JSON_TOO_DEEP',
      ],
      ['no type', '{}', 'UNKNOWN_FRAME_TYPE'],
      ['an unknown type', '{"type":"launch"}', 'UNKNOWN_FRAME_TYPE'],
      ['agent_ids not a list', '{"type":"subscribe","agent_ids":"agent-1"}', 'VALIDATION_FAILED'],
      ['agent_ids with a number', '{"type":"subscribe","agent_ids":[1]}', 'VALIDATION_FAILED'],
      [
        'a decision without request_id',
        '{"type":"consent.decision","decision":"deny"}',
        'VALIDATION_FAILED',
      ],
      [
        'a decision on an unknown request',
        '{"type":"consent.decision","request_id":"consent-00000000-0000-4000-8000-000000000000","decision":"deny"}',
        'NOT_FOUND',
      ],
    ])('%s gets an error frame and the connection stays open', async (_name, raw, code) => {
      const c = await connect('sk-a');
      const err = await c.request(raw, 'error');
      expect(err).toMatchObject({ type: 'error', code, message: expect.any(String) });
      expect(await c.request({ type: 'ping' }, 'pong')).toEqual({ type: 'pong' });
    });

    it('a binary frame gets an error frame', async () => {
      const c = await connect('sk-a');
      const from = c.frames.length;
      c.ws.send(Buffer.from('{"type":"ping"}'), { binary: true });
      expect(await c.next((f) => f.type === 'error', from)).toMatchObject({
        code: 'MALFORMED_FRAME',
      });
    });
  });

  describe('requests and decisions', () => {
    it('pushes a new request to subscribers of its agent only, and resolves it for all of them', async () => {
      const agent = newAgentId();
      const all = await connect('sk-a');
      const mine = await connect('sk-a');
      const other = await connect('sk-a');
      const unsubscribed = await connect('sk-a');
      await all.subscribe();
      await mine.subscribe([agent]);
      await other.subscribe([newAgentId()]);

      const check = aCheck({ tenantId: 'team-a', agentId: agent, arguments: { amount: 7 } });
      const res = await port(t).check(check);
      expect(res.kind).toBe('pending');
      const requestId = (res as { requestId: string }).requestId;

      for (const c of [all, mine]) {
        const f = await c.next((x) => x.type === 'consent.request' && x.request.id === requestId);
        expect(f.request).toEqual({
          id: requestId,
          agent_id: agent,
          run_id: check.runId,
          tool_call_id: check.toolCallId,
          tool_name: 'pay',
          arguments: { amount: 7 },
          scope: 'pay',
          reason: expect.any(String),
          created_at: expect.any(String),
          expires_at: expect.any(String),
        });
      }

      const resolved = await mine.request(
        { type: 'consent.decision', request_id: requestId, decision: 'deny', reason: 'not today' },
        'consent.resolved',
      );
      expect(resolved).toMatchObject({
        type: 'consent.resolved',
        request_id: requestId,
        decision: 'deny',
        reason: 'not today',
        decided_by: 'team-a',
        channel: 'ws',
      });
      await all.next((x) => x.type === 'consent.resolved' && x.request_id === requestId);

      await Promise.all([other.sync(), unsubscribed.sync()]);
      expect(other.frames.filter((f) => f.type.startsWith('consent.'))).toEqual([]);
      expect(unsubscribed.frames.filter((f) => f.type.startsWith('consent.'))).toEqual([]);

      // the parked batch resumes: the executor's re-check sees the denial with the person's reason
      expect(await port(t).check(check)).toEqual({
        kind: 'denied',
        reason: 'not today',
        requestId,
      });
    });

    it('redelivers pending requests on subscribe, to late and reconnecting clients', async () => {
      const agent = newAgentId();
      const r1 = (await port(t).check(aCheck({ tenantId: 'team-a', agentId: agent }))) as any;
      const r2 = (await port(t).check(aCheck({ tenantId: 'team-a', agentId: agent }))) as any;
      const late = await connect('sk-a');
      await late.subscribe([agent]);
      await late.next((f) => f.type === 'consent.request' && f.request.id === r2.requestId);
      expect(late.ofType('consent.request').map((f) => f.request.id)).toEqual([
        r1.requestId,
        r2.requestId,
      ]);

      await late.close();
      const again = await connect('sk-a', true);
      await again.subscribe();
      await again.next((f) => f.type === 'consent.request' && f.request.id === r1.requestId);
      await again.next((f) => f.type === 'consent.request' && f.request.id === r2.requestId);
    });

    it('two clients racing: one wins, the other gets consent.resolved and ALREADY_RESOLVED', async () => {
      const agent = newAgentId();
      const a = await connect('sk-a');
      const b = await connect('sk-a');
      await a.subscribe([agent]);
      await b.subscribe([agent]);
      const check = aCheck({ tenantId: 'team-a', agentId: agent });
      const { requestId } = (await port(t).check(check)) as any;
      await a.next((f) => f.type === 'consent.request');
      await b.next((f) => f.type === 'consent.request');

      const fromA = a.frames.length;
      const fromB = b.frames.length;
      a.send({ type: 'consent.decision', request_id: requestId, decision: 'approve_once' });
      b.send({
        type: 'consent.decision',
        request_id: requestId,
        decision: 'deny',
        reason: 'b says no',
      });
      const ra = await a.next((f) => f.type === 'consent.resolved', fromA);
      const rb = await b.next((f) => f.type === 'consent.resolved', fromB);
      expect(ra).toEqual(rb); // both dialogs learn the same single outcome
      // the loser is told its decision did not count
      const [loser, loserFrom, winner] = ra.decision === 'deny' ? [a, fromA, b] : [b, fromB, a];
      expect(await loser.next((f) => f.type === 'error', loserFrom)).toEqual({
        type: 'error',
        code: 'ALREADY_RESOLVED',
        message: expect.any(String),
        ref: requestId,
      });
      await winner.sync();
      expect(
        winner.frames.slice(winner === a ? fromA : fromB).filter((f) => f.type === 'error'),
      ).toEqual([]);
      expect(a.ofType('consent.resolved').filter((f) => f.request_id === requestId)).toHaveLength(
        1,
      );

      const outcome = await port(t).check(check);
      expect(outcome.kind).toBe(ra.decision === 'deny' ? 'denied' : 'approved');
      // audit: one decision only
      const audit = await api(
        t,
        'GET',
        `/v1/consent/audit?request_id=${requestId}`,
        undefined,
        'sk-a',
      );
      expect(audit.body.filter((e: any) => e.event === 'request.decided')).toHaveLength(1);
    });

    it('a REST decision and a WebSocket decision race the same way', async () => {
      const agent = newAgentId();
      const ws = await connect('sk-a');
      await ws.subscribe([agent]);
      const { requestId } = (await port(t).check(
        aCheck({ tenantId: 'team-a', agentId: agent }),
      )) as any;
      await ws.next((f) => f.type === 'consent.request');
      const from = ws.frames.length;
      const restCall = api(
        t,
        'POST',
        `/v1/consent/requests/${requestId}/decision`,
        { decision: 'approve_once' },
        'sk-a',
      );
      ws.send({ type: 'consent.decision', request_id: requestId, decision: 'deny' });
      const rest = await restCall;
      const resolved = await ws.next((f) => f.type === 'consent.resolved', from);
      if (resolved.channel === 'rest') {
        expect(rest.status).toBe(200);
        expect(await ws.next((f) => f.type === 'error', from)).toMatchObject({
          code: 'ALREADY_RESOLVED',
        });
      } else {
        expect(rest).toMatchObject({ status: 409, body: { code: 'ALREADY_RESOLVED' } });
      }
    });

    it('a client that decides without subscribing still gets the outcome', async () => {
      const { requestId } = (await port(t).check(aCheck({ tenantId: 'team-a' }))) as any;
      const c = await connect('sk-a');
      const r = await c.request(
        { type: 'consent.decision', request_id: requestId, decision: 'approve_for_scope' },
        'consent.resolved',
      );
      expect(r).toMatchObject({
        decision: 'approve_for_scope',
        grant_id: expect.stringMatching(/^grant-/),
      });
    });

    it.each([
      ['duration without seconds', { decision: 'approve_for_duration' }],
      ['an unknown decision', { decision: 'maybe' }],
      [
        'a constraint that does not compile',
        { decision: 'approve_for_scope', constraint: { type: 'nope' } },
      ],
    ])(
      'an invalid decision (%s) gets VALIDATION_FAILED and the request stays pending',
      async (_n, d) => {
        const { requestId } = (await port(t).check(aCheck({ tenantId: 'team-a' }))) as any;
        const c = await connect('sk-a');
        const err = await c.request(
          { type: 'consent.decision', request_id: requestId, ...d },
          'error',
        );
        expect(err).toMatchObject({ code: 'VALIDATION_FAILED', ref: requestId });
        expect((await broker(t).getRequest('team-a', requestId)).status).toBe('pending');
      },
    );
  });

  describe('tenant isolation', () => {
    it('a client of one tenant never sees or answers another tenant’s requests', async () => {
      const agent = newAgentId();
      const a = await connect('sk-a');
      const b = await connect('sk-b');
      await a.subscribe([agent]);
      await b.subscribe([agent]); // same agent id, other tenant: still nothing
      await b.subscribe();
      const { requestId } = (await port(t).check(
        aCheck({ tenantId: 'team-a', agentId: agent }),
      )) as any;
      await a.next((f) => f.type === 'consent.request' && f.request.id === requestId);

      const err = await b.request(
        { type: 'consent.decision', request_id: requestId, decision: 'approve_once' },
        'error',
      );
      expect(err).toMatchObject({ code: 'NOT_FOUND', ref: requestId });
      expect(b.frames.filter((f) => f.type.startsWith('consent.'))).toEqual([]);
      expect((await broker(t).getRequest('team-a', requestId)).status).toBe('pending');
      // and over REST
      expect(
        (await api(t, 'GET', `/v1/consent/requests/${requestId}`, undefined, 'sk-b')).status,
      ).toBe(404);
      const listB = await api(t, 'GET', '/v1/consent/requests?status=all', undefined, 'sk-b');
      expect(listB.body.map((r: any) => r.id)).not.toContain(requestId);
    });
  });

  describe('run events', () => {
    it('forwards run events of subscribed agents only', async () => {
      const { RunEventsBus } = await import('../../src/common/run-events');
      const agent = newAgentId();
      const c = await connect('sk-a');
      await c.subscribe([agent]);
      const bus = t.app.get(RunEventsBus);
      bus.publish({
        tenantId: 'team-b',
        agentId: agent,
        runId: 'run-x',
        type: 'step.started',
        data: {},
      });
      bus.publish({
        tenantId: 'team-a',
        agentId: newAgentId(),
        runId: 'run-y',
        type: 'step.started',
        data: {},
      });
      bus.publish({
        tenantId: 'team-a',
        agentId: agent,
        runId: 'run-z',
        type: 'step.started',
        data: { step: 1 },
      });
      const f = await c.next((x) => x.type === 'run.event');
      expect(f).toEqual({
        type: 'run.event',
        event: 'step.started',
        agent_id: agent,
        run_id: 'run-z',
        data: { step: 1 },
      });
      await c.sync();
      expect(c.ofType('run.event')).toHaveLength(1);
    });
  });
});
