/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { rmSync } from 'node:fs';
import { startApp } from '../support/app-harness';
import { aCheck, api, broker, fakeClock, newAgentId, port, WsClient } from './consent-helpers';

/** Pending requests, grants and the audit log survive a restart; what expired while down is denied at boot. */
describe('consent across a restart', () => {
  it('redelivers a pending request after a restart, takes its answer, and times out what expired while down', async () => {
    const first = await startApp({ keepDir: true });
    const dir = first.dir;
    try {
      const agentId = newAgentId();
      const stillPending = aCheck({ agentId, timeoutMs: 3_600_000 });
      const r1 = (await port(first).check(stillPending)) as any;
      // created "an hour ago" with a 1 s expiry: it expires while the server is down
      const clock = fakeClock(first, Date.now() - 3_600_000);
      const expiring = aCheck({ agentId, timeoutMs: 1000 });
      const r2 = (await port(first).check(expiring)) as any;
      clock.restore();
      const grantReq = aCheck({ agentId, scope: 'lights' });
      const r3 = (await port(first).check(grantReq)) as any;
      const { grant } = await broker(first).decide(
        'default',
        r3.requestId,
        { decision: 'approve_for_scope' },
        'rest',
      );
      await first.close();

      const second = await startApp({ dir });
      try {
        // boot denied the one whose time ran out, as a timeout by the system, audited
        const expired = await api(second, 'GET', `/v1/consent/requests/${r2.requestId}`);
        expect(expired.body).toMatchObject({
          status: 'denied',
          decision_reason: 'timeout',
          decided_by: 'system',
        });
        expect(await port(second).check(expiring)).toMatchObject({
          kind: 'denied',
          reason: 'timeout',
        });
        const audit = await api(second, 'GET', `/v1/consent/audit?request_id=${r2.requestId}`);
        expect(audit.body.map((e: any) => e.event)).toEqual(['request.created', 'request.expired']);

        // the other one is pushed again to a client that subscribes, and its answer counts
        const ws = await WsClient.connect(second.baseUrl);
        await ws.subscribe([agentId]);
        await ws.next((f) => f.type === 'consent.request' && f.request.id === r1.requestId);
        expect(ws.ofType('consent.request').map((f) => f.request.id)).toEqual([r1.requestId]);
        await ws.request(
          { type: 'consent.decision', request_id: r1.requestId, decision: 'approve_once' },
          'consent.resolved',
        );
        expect(await port(second).check(stillPending)).toEqual({
          kind: 'approved',
          requestId: r1.requestId,
        });
        await ws.close();

        // the grant survived
        expect(await port(second).check(aCheck({ agentId, scope: 'lights' }))).toEqual({
          kind: 'granted',
          grantId: grant!.id,
        });
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
