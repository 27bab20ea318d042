/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { ConsentRepository } from '../../../src/permissions/consent.repository';
import { startApp, TestApp } from '../../support/app-harness';
import { aCheck, api, broker, fakeClock, port } from '../consent-helpers';

/**
 * QA: 1,743 `approve_for_duration` grants with constraints made one consent-checked call take 0.5 s (every
 * unrevoked grant of the scope was loaded, expired ones too, and its constraint checked), and
 * `GET /v1/agents/{id}/grants` answered all of them (14.6 MB), ignoring `limit`. Now: only active grants are
 * read, an agent holds at most `consent.max_active_grants_per_agent` (409 GRANT_LIMIT, the request stays
 * pending), the list is paged, and old revoked or expired grants are pruned.
 */
describe('security: bounded grants', () => {
  const MAX_GRANTS = 3;
  const MINUTE = 60_000;
  const DAY = 86_400_000;
  let t: TestApp;
  let clock: ReturnType<typeof fakeClock>;

  beforeAll(async () => {
    t = await startApp({
      overrides: { consent: { max_active_grants_per_agent: MAX_GRANTS, grant_retention_days: 1 } },
    });
    clock = fakeClock(t);
  });
  afterAll(async () => {
    clock.restore();
    await t.close();
  });

  const newAgent = async () => (await api(t, 'POST', '/v1/agents/', {})).body.id as string;
  /** A pending request of the agent for `scope`. */
  const ask = async (agentId: string, scope: string) => {
    const check = aCheck({ agentId, scope, toolName: scope });
    const res = await port(t).check(check);
    expect(res.kind).toBe('pending');
    return { check, requestId: (res as { requestId: string }).requestId };
  };
  const decide = (requestId: string, body: Record<string, unknown>) =>
    api(t, 'POST', `/v1/consent/requests/${requestId}/decision`, body);
  const forAMinute = { decision: 'approve_for_duration', seconds: 60 };
  /** An active grant of the agent for `scope` (a minute long). */
  const grant = async (agentId: string, scope: string) => {
    const res = await decide((await ask(agentId, scope)).requestId, forAMinute);
    expect(res.status).toBe(200);
    return res.body.grant.id as string;
  };

  it('a person approves one grant past the bound → 409 GRANT_LIMIT; the request stays pending, nothing runs', async () => {
    const agentId = await newAgent();
    const grants: string[] = [];
    for (let i = 0; i < MAX_GRANTS; i++) grants.push(await grant(agentId, `scope_${i}`));
    const { check, requestId } = await ask(agentId, 'one_more');
    for (const body of [forAMinute, { decision: 'approve_for_scope' }]) {
      const res = await decide(requestId, body);
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({
        code: 'GRANT_LIMIT',
        message: expect.stringContaining('consent.max_active_grants_per_agent'),
        details: { max: MAX_GRANTS, request_id: requestId },
      });
    }
    expect((await api(t, 'GET', `/v1/consent/requests/${requestId}`)).body.status).toBe('pending');
    expect((await port(t).check(check)).kind).toBe('pending');
    // a decision that makes no grant is still answered; so is a grant once one is revoked
    expect((await decide(requestId, { decision: 'approve_once' })).status).toBe(200);
    expect((await decide((await ask(agentId, 'x')).requestId, forAMinute)).status).toBe(409);
    await api(t, 'DELETE', `/v1/grants/${grants[0]}`);
    await grant(agentId, 'after_revoke');
    // expired grants do not count: a minute later there is room again
    clock.advance(MINUTE);
    await grant(agentId, 'after_expiry');
    // another agent has its own bound
    await grant(await newAgent(), 'scope_0');
  });

  it('expired grants are never loaded by a consent check', async () => {
    const agentId = await newAgent();
    const expired = await grant(agentId, 'pay');
    clock.advance(MINUTE);
    const live = await grant(agentId, 'pay');
    const repo = t.app.get(ConsentRepository);
    const candidates = await repo.candidateGrants('default', agentId, 'pay', clock.now);
    expect(candidates.map((g) => g.id)).toEqual([live]);
    expect(candidates.map((g) => g.id)).not.toContain(expired);
    expect(await port(t).check(aCheck({ agentId, scope: 'pay' }))).toEqual({
      kind: 'granted',
      grantId: live,
    });
  });

  it('GET /v1/agents/{id}/grants is paged: limit, after / before, at most limits.max_page_size', async () => {
    const agentId = await newAgent();
    const ids: string[] = [];
    for (let i = 0; i < MAX_GRANTS; i++) {
      ids.push(await grant(agentId, `s${i}`));
      clock.advance(1);
    }
    const newestFirst = [...ids].reverse();
    const list = async (q: string) => {
      const res = await api(t, 'GET', `/v1/agents/${agentId}/grants${q}`);
      expect(res.status).toBe(200);
      return (res.body as any[]).map((g) => g.id);
    };
    expect(await list('')).toEqual(newestFirst);
    expect(await list('?limit=2')).toEqual(newestFirst.slice(0, 2));
    expect(await list(`?limit=2&after=${newestFirst[1]}`)).toEqual(newestFirst.slice(2));
    expect(await list(`?before=${newestFirst[2]}`)).toEqual(newestFirst.slice(0, 2));
    expect(await list('?order=asc&limit=1')).toEqual([ids[0]]);
    const tooMany = await api(t, 'GET', `/v1/agents/${agentId}/grants?limit=1001`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.code).toBe('VALIDATION_FAILED');
    const otherAgents = await grant(await newAgent(), 's0');
    const foreign = await api(t, 'GET', `/v1/agents/${agentId}/grants?after=${otherAgents}`);
    expect(foreign.status).toBe(400);
    expect(foreign.body.code).toBe('UNKNOWN_CURSOR');
  });

  it('revoked and expired grants are deleted after consent.grant_retention_days; live ones and the audit stay', async () => {
    const agentId = await newAgent();
    const revoked = await grant(agentId, 'a');
    await api(t, 'DELETE', `/v1/grants/${revoked}`);
    const expires = await grant(agentId, 'b');
    const forever = (
      await decide((await ask(agentId, 'c')).requestId, {
        decision: 'approve_for_scope',
      })
    ).body.grant.id as string;
    const ids = async () =>
      ((await api(t, 'GET', `/v1/agents/${agentId}/grants`)).body as any[]).map((g) => g.id);
    // within the retention (earlier tests' old grants may go): all three stay
    await broker(t).pruneGrants(clock.now + DAY - 1);
    expect(await ids()).toHaveLength(3);
    clock.advance(DAY + 2 * MINUTE); // a day after the minute grant expired
    expect(await broker(t).pruneGrants()).toBeGreaterThanOrEqual(2);
    expect(await ids()).toEqual([forever]);
    const audit = (await api(t, 'GET', `/v1/consent/audit?agent_id=${agentId}`)).body as any[];
    expect(audit.filter((a) => a.event === 'grant.created').map((a) => a.grant_id)).toEqual(
      expect.arrayContaining([revoked, expires, forever]),
    );
  });
});
