/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { startApp, TestApp } from '../support/app-harness';
import { aCheck, api, broker, fakeClock, newAgentId, port, WsClient } from './consent-helpers';

const KEYS = {
  auth: {
    api_keys: [
      { key: 'sk-a', tenant: 'team-a' },
      { key: 'sk-b', tenant: 'team-b' },
    ],
  },
};
const A = 'sk-a';

/** The broker through the executor's port and the REST API, with the app's clock pinned. */
describe('PermissionBroker and the consent REST API', () => {
  let t: TestApp;
  let clock: ReturnType<typeof fakeClock>;

  beforeAll(async () => {
    t = await startApp({ overrides: KEYS });
  });
  beforeEach(() => {
    clock = fakeClock(t);
  });
  afterEach(() => clock.restore());
  afterAll(async () => {
    await t.close();
  });

  const pending = async (over: Parameters<typeof aCheck>[0] = {}) => {
    const check = aCheck({ tenantId: 'team-a', ...over });
    const res = await port(t).check(check);
    expect(res.kind).toBe('pending');
    return { check, requestId: (res as { requestId: string }).requestId };
  };
  const decide = (id: string, body: unknown, key = A) =>
    api(t, 'POST', `/v1/consent/requests/${id}/decision`, body, key);

  describe('check', () => {
    it('the same pending call reuses its request (no second request, no second push)', async () => {
      const { check, requestId } = await pending();
      expect(await port(t).check(check)).toEqual({ kind: 'pending', requestId });
      const list = await api(t, 'GET', '/v1/consent/requests?status=all', undefined, A);
      expect(list.body.filter((r: any) => r.tool_call_id === check.toolCallId)).toHaveLength(1);
    });

    it('approve_once: the approved call runs once; a second check of it fails closed; a new call asks again', async () => {
      const { check, requestId } = await pending();
      const res = await decide(requestId, { decision: 'approve_once' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        id: requestId,
        status: 'approved',
        decision: 'approve_once',
        grant: null,
      });
      expect(await port(t).check(check)).toEqual({ kind: 'approved', requestId });
      expect(await port(t).check(check)).toEqual({
        kind: 'denied',
        reason: expect.stringContaining('already used'),
        requestId,
      });
      const next = await port(t).check({
        ...aCheck({ tenantId: 'team-a', agentId: check.agentId }),
      });
      expect(next.kind).toBe('pending');
    });

    it('an approval does not cover a different call under the same tool_call_id', async () => {
      const { check, requestId } = await pending();
      await decide(requestId, { decision: 'approve_once' });
      const changed = await port(t).check({ ...check, arguments: { amount: 5000 } });
      expect(changed).toMatchObject({ kind: 'denied', requestId });
      // and the approval was not spent by the impostor
      expect(await port(t).check(check)).toEqual({ kind: 'approved', requestId });
    });

    it('deny: denied with the person’s reason, never approved', async () => {
      const { check, requestId } = await pending();
      await decide(requestId, { decision: 'deny', reason: 'too expensive' });
      expect(await port(t).check(check)).toEqual({
        kind: 'denied',
        reason: 'too expensive',
        requestId,
      });
    });

    it('approve_for_duration: covered until it expires, then asked again', async () => {
      const agentId = newAgentId();
      const { check, requestId } = await pending({ agentId });
      const res = await decide(requestId, { decision: 'approve_for_duration', seconds: 60 });
      const grantId = res.body.grant.id;
      expect(res.body.grant).toMatchObject({
        agent_id: agentId,
        scope: 'pay',
        decision: 'approve_for_duration',
        expires_at: new Date(clock.now + 60_000).toISOString(),
      });
      expect(await port(t).check(check)).toEqual({ kind: 'approved', requestId });
      clock.advance(59_999);
      expect(await port(t).check(aCheck({ tenantId: 'team-a', agentId }))).toEqual({
        kind: 'granted',
        grantId,
      });
      clock.advance(1);
      expect((await port(t).check(aCheck({ tenantId: 'team-a', agentId }))).kind).toBe('pending');
    });

    it('approve_for_scope: covers every tool sharing the scope, for this agent only, until revoked', async () => {
      const agentId = (await api(t, 'POST', '/v1/agents/', { name: 'grants' }, A)).body
        .id as string;
      const { requestId } = await pending({ agentId, toolName: 'send_email', scope: 'outbound' });
      const { body } = await decide(requestId, { decision: 'approve_for_scope' });
      const grantId = body.grant.id;
      const sms = aCheck({ tenantId: 'team-a', agentId, toolName: 'send_sms', scope: 'outbound' });
      expect(await port(t).check(sms)).toEqual({ kind: 'granted', grantId });
      clock.advance(365 * 24 * 3600 * 1000);
      expect(await port(t).check({ ...sms, toolCallId: 'call_later' })).toEqual({
        kind: 'granted',
        grantId,
      });
      // other scope, other agent, other tenant: not covered
      expect(
        (await port(t).check(aCheck({ tenantId: 'team-a', agentId, scope: 'payments' }))).kind,
      ).toBe('pending');
      expect((await port(t).check(aCheck({ tenantId: 'team-a', scope: 'outbound' }))).kind).toBe(
        'pending',
      );
      expect(
        (await port(t).check(aCheck({ tenantId: 'team-b', agentId, scope: 'outbound' }))).kind,
      ).toBe('pending');

      // the tenant-wide list: A's grant for A, nothing of A's for B (also with A's agent id)
      const all = async (q: string, key: string) =>
        ((await api(t, 'GET', `/v1/grants${q}`, undefined, key)).body as any[]).map((g) => g.id);
      expect(await all('', A)).toContain(grantId);
      expect(await all(`?agent_id=${agentId}`, A)).toEqual([grantId]);
      expect(await all('', 'sk-b')).not.toContain(grantId);
      expect(await all(`?agent_id=${agentId}`, 'sk-b')).toEqual([]);

      const grants = await api(t, 'GET', `/v1/agents/${agentId}/grants`, undefined, A);
      expect(grants.body).toEqual([
        {
          id: grantId,
          agent_id: agentId,
          scope: 'outbound',
          decision: 'approve_for_scope',
          expires_at: null,
          constraint: null,
          created_at: expect.any(String),
          revoked_at: null,
          request_id: requestId,
        },
      ]);
      expect((await api(t, 'DELETE', `/v1/grants/${grantId}`, undefined, 'sk-b')).status).toBe(404);
      const revoked = await api(t, 'DELETE', `/v1/grants/${grantId}`, undefined, A);
      expect(revoked).toMatchObject({
        status: 200,
        body: { id: grantId, revoked_at: expect.any(String) },
      });
      expect((await port(t).check({ ...sms, toolCallId: 'call_after_revoke' })).kind).toBe(
        'pending',
      );
      expect((await api(t, 'DELETE', `/v1/grants/${grantId}`, undefined, A)).status).toBe(200); // idempotent
      expect((await api(t, 'GET', `/v1/agents/${agentId}/grants`, undefined, 'sk-b')).status).toBe(
        404,
      );
      expect((await api(t, 'GET', `/v1/agents/${newAgentId()}/grants`, undefined, A)).status).toBe(
        404,
      );
    });

    it('a constraint: covered within it, asked outside it', async () => {
      const agentId = newAgentId();
      const { requestId } = await pending({ agentId, arguments: { amount: 20 } });
      const constraint = {
        type: 'object',
        properties: { amount: { type: 'number', maximum: 100 } },
      };
      const { body } = await decide(requestId, { decision: 'approve_for_scope', constraint });
      expect(body.grant.constraint).toEqual(constraint);
      const within = aCheck({ tenantId: 'team-a', agentId, arguments: { amount: 100 } });
      expect(await port(t).check(within)).toEqual({ kind: 'granted', grantId: body.grant.id });
      const outside = aCheck({ tenantId: 'team-a', agentId, arguments: { amount: 101 } });
      expect((await port(t).check(outside)).kind).toBe('pending');
    });
  });

  describe('decisions over REST', () => {
    it.each([
      ['an unknown decision', { decision: 'yes' }],
      ['duration without seconds', { decision: 'approve_for_duration' }],
      ['duration with 0 seconds', { decision: 'approve_for_duration', seconds: 0 }],
      ['an invalid constraint', { decision: 'approve_for_scope', constraint: { type: 12 } }],
      ['a body that is not an object', [1]],
    ])('%s → 400 and the request stays pending', async (_n, body) => {
      const { requestId } = await pending();
      const res = await decide(requestId, body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect((await broker(t).getRequest('team-a', requestId)).status).toBe('pending');
    });

    it('a second decision gets 409 ALREADY_RESOLVED and changes nothing', async () => {
      const { requestId } = await pending();
      expect((await decide(requestId, { decision: 'deny' })).status).toBe(200);
      const again = await decide(requestId, { decision: 'approve_for_scope' });
      expect(again).toMatchObject({ status: 409, body: { code: 'ALREADY_RESOLVED' } });
      expect(
        (await api(t, 'GET', `/v1/consent/requests/${requestId}`, undefined, A)).body,
      ).toMatchObject({
        status: 'denied',
        decision: 'deny',
        channel: 'rest',
        decided_by: 'team-a',
      });
    });

    it('another tenant’s request is 404 everywhere; malformed ids are 404', async () => {
      const { requestId } = await pending();
      expect((await decide(requestId, { decision: 'approve_once' }, 'sk-b')).status).toBe(404);
      expect(
        (await api(t, 'GET', `/v1/consent/requests/${requestId}`, undefined, 'sk-b')).status,
      ).toBe(404);
      expect((await api(t, 'GET', '/v1/consent/requests/nope', undefined, A)).status).toBe(404);
      expect((await api(t, 'DELETE', '/v1/grants/../x', undefined, A)).status).toBe(404);
      expect((await api(t, 'GET', '/v1/consent/requests', undefined)).status).toBe(401);
    });

    it('lists requests by status as a bare array', async () => {
      const { requestId: open } = await pending();
      const { requestId: done } = await pending();
      await decide(done, { decision: 'deny' });
      const ids = async (q: string) =>
        ((await api(t, 'GET', `/v1/consent/requests${q}`, undefined, A)).body as any[]).map(
          (r) => r.id,
        );
      expect(await ids('')).toContain(open);
      expect(await ids('')).not.toContain(done);
      expect(await ids('?status=pending')).not.toContain(done);
      expect(await ids('?status=resolved')).toEqual(expect.arrayContaining([done]));
      expect(await ids('?status=resolved')).not.toContain(open);
      expect(await ids('?status=all')).toEqual(expect.arrayContaining([open, done]));
      expect((await api(t, 'GET', '/v1/consent/requests?status=maybe', undefined, A)).status).toBe(
        400,
      );
    });

    it('agent_id filters the list to that agent; another tenant or an unknown agent lists none', async () => {
      const mine = newAgentId();
      const other = newAgentId();
      const { requestId: a1 } = await pending({ agentId: mine });
      const { requestId: b1 } = await pending({ agentId: other });
      const list = async (q: string, key = A) => {
        const res = await api(t, 'GET', `/v1/consent/requests${q}`, undefined, key);
        expect(res.status).toBe(200);
        return res.body as any[];
      };
      const ofMine = await list(`?status=all&agent_id=${mine}`);
      expect(ofMine.map((r) => r.id)).toEqual([a1]);
      expect(ofMine.every((r) => r.agent_id === mine)).toBe(true);
      expect((await list(`?agent_id=${other}`)).map((r) => r.id)).toEqual([b1]);
      expect(await list(`?status=resolved&agent_id=${mine}`)).toEqual([]);
      // another tenant's key with this tenant's agent, and an agent nobody has: none (as /v1/grants)
      expect(await list(`?status=all&agent_id=${mine}`, 'sk-b')).toEqual([]);
      expect(await list(`?status=all&agent_id=${newAgentId()}`)).toEqual([]);
      // without the filter both are there
      expect((await list('?status=all')).map((r) => r.id)).toEqual(
        expect.arrayContaining([a1, b1]),
      );
      // a malformed id: as GET /v1/grants?agent_id=
      const bad = await api(t, 'GET', '/v1/consent/requests?agent_id=nope', undefined, A);
      const badGrants = await api(t, 'GET', '/v1/grants?agent_id=nope', undefined, A);
      expect(bad.status).toBe(badGrants.status);
    });

    it('decideByToolCall (Letta in-band approval) with an optional grant', async () => {
      const agentId = newAgentId();
      const { check, requestId } = await pending({ agentId });
      const res = await broker(t).decideByToolCall('team-a', agentId, check.toolCallId, {
        approve: true,
        grant: { decision: 'approve_for_duration', seconds: 30 },
      });
      expect(res.request).toMatchObject({ id: requestId, status: 'approved', channel: 'rest' });
      expect(res.grant).toMatchObject({ decision: 'approve_for_duration', scope: 'pay' });
      await expect(
        broker(t).decideByToolCall('team-a', agentId, check.toolCallId, { approve: false }),
      ).rejects.toMatchObject({ code: 'ALREADY_RESOLVED' });
      await expect(
        broker(t).decideByToolCall('team-a', agentId, 'call_unknown', { approve: true }),
      ).rejects.toMatchObject({ code: 'NO_PENDING_APPROVAL' });
    });
  });

  describe('expiry', () => {
    it('times out at its expiry: denied with reason timeout by the system, pushed, listeners told, never approved', async () => {
      const agentId = newAgentId();
      const ws = await WsClient.connect(t.baseUrl, { key: A });
      await ws.subscribe([agentId]);
      const seen: any[] = [];
      const off = broker(t).onDecision((e) => {
        seen.push(e);
      });
      try {
        const { check, requestId } = await pending({ agentId, timeoutMs: 5000 });
        clock.advance(4999);
        expect(await broker(t).expireDue()).toBe(0);
        clock.advance(1);
        expect(await broker(t).expireDue()).toBeGreaterThanOrEqual(1);
        expect(
          await ws.next((f) => f.type === 'consent.resolved' && f.request_id === requestId),
        ).toEqual({
          type: 'consent.resolved',
          request_id: requestId,
          decision: 'deny',
          reason: 'timeout',
          decided_by: 'system',
          channel: 'system',
        });
        expect(seen.filter((e) => e.requestId === requestId)).toEqual([
          expect.objectContaining({
            approve: false,
            reason: 'timeout',
            cause: 'timeout',
            toolCallId: check.toolCallId,
          }),
        ]);
        expect(await port(t).check(check)).toEqual({
          kind: 'denied',
          reason: 'timeout',
          requestId,
        });
        // a decision after the deadline does not count
        expect((await decide(requestId, { decision: 'approve_once' })).status).toBe(409);
      } finally {
        off();
        await ws.close();
      }
    });

    it('a late answer before the sweep ran still fails closed', async () => {
      const { check, requestId } = await pending({ timeoutMs: 1000 });
      clock.advance(1000);
      const res = await decide(requestId, { decision: 'approve_once' });
      expect(res).toMatchObject({
        status: 409,
        body: { code: 'ALREADY_RESOLVED', details: { reason: 'timeout' } },
      });
      expect(await port(t).check(check)).toMatchObject({ kind: 'denied', reason: 'timeout' });
    });

    it('the executor re-checking an expired pending call gets the timeout denial', async () => {
      const { check } = await pending({ timeoutMs: 1000 });
      clock.advance(2000);
      expect(await port(t).check(check)).toMatchObject({ kind: 'denied', reason: 'timeout' });
    });
  });

  describe('cancellation', () => {
    it('denyPendingForCalls denies the pending requests of the given calls with the reason, no others', async () => {
      const agentId = newAgentId();
      const a = await pending({ agentId });
      const b = await pending({ agentId });
      const deny = (ids: string[]) =>
        broker(t).denyPendingForCalls('team-a', agentId, ids, 'cancelled');
      expect(await deny([a.check.toolCallId])).toBe(1);
      expect(await port(t).check(a.check)).toMatchObject({ kind: 'denied', reason: 'cancelled' });
      const left = await broker(t).pendingFor('team-a', [agentId]);
      expect(left.map((r) => r.id)).toEqual([b.requestId]);
      expect(await deny([a.check.toolCallId, b.check.toolCallId])).toBe(1);
      expect(await port(t).check(b.check)).toMatchObject({ kind: 'denied', reason: 'cancelled' });
      expect(await broker(t).pendingFor('team-a', [agentId])).toEqual([]);
    });
  });

  describe('audit', () => {
    it('records who decided, through which channel, when: request, decision, grant, grant use, revocation', async () => {
      const agentId = newAgentId();
      const { check, requestId } = await pending({ agentId });
      const { body } = await decide(requestId, { decision: 'approve_for_scope', reason: 'fine' });
      await port(t).check(check);
      await port(t).check(aCheck({ tenantId: 'team-a', agentId }));
      await api(t, 'DELETE', `/v1/grants/${body.grant.id}`, undefined, A);
      const audit = await api(t, 'GET', `/v1/consent/audit?agent_id=${agentId}`, undefined, A);
      expect(audit.body.map((e: any) => [e.event, e.actor, e.channel])).toEqual([
        ['request.created', 'system', 'system'],
        ['request.decided', 'team-a', 'rest'],
        ['grant.created', 'team-a', 'rest'],
        ['approval.used', 'system', 'system'],
        ['grant.used', 'system', 'system'],
        ['grant.revoked', 'team-a', 'rest'],
      ]);
      expect(audit.body[1]).toMatchObject({
        request_id: requestId,
        decision: 'approve_for_scope',
        reason: 'fine',
        at: new Date(clock.now).toISOString(),
      });
      expect(
        (await api(t, 'GET', `/v1/consent/audit?agent_id=${agentId}`, undefined, 'sk-b')).body,
      ).toEqual([]);
      const page = await api(
        t,
        'GET',
        `/v1/consent/audit?agent_id=${agentId}&after=${audit.body[3].id}`,
        undefined,
        A,
      );
      expect(page.body.map((e: any) => e.event)).toEqual(['grant.used', 'grant.revoked']);
    });
  });
});

/** Tests boot several apps in one process: each app's executor must reach its own broker, and only it. */
describe('two apps in one process', () => {
  it("each app's CONSENT_PORT is that app's broker; closing one leaves the other working", async () => {
    const [a, b] = await Promise.all([
      startApp({ overrides: KEYS }),
      startApp({ overrides: KEYS }),
    ]);
    try {
      expect(port(a)).toBe(broker(a));
      expect(port(b)).toBe(broker(b));
      expect(port(a)).not.toBe(port(b));

      const inB = await port(b).check(aCheck({ tenantId: 'team-a' }));
      expect(inB.kind).toBe('pending');
      expect((await api(a, 'GET', '/v1/consent/requests', undefined, A)).body).toEqual([]);

      await b.close();
      const inA = await port(a).check(aCheck({ tenantId: 'team-a' }));
      expect(inA.kind).toBe('pending');
      const listed = await api(a, 'GET', '/v1/consent/requests', undefined, A);
      expect(listed.body.map((r: any) => r.id)).toEqual([(inA as { requestId: string }).requestId]);
    } finally {
      await a.close();
      await b.close().catch(() => undefined);
    }
  });
});
