/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { Logger } from '@nestjs/common';
import { rmSync } from 'node:fs';
import { NOT_STARTED, OUTCOME_UNKNOWN } from '../../../src/processing/run-recovery';
import { startApp, TestApp } from '../../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../../support/fake-model-server';
import {
  api,
  createAgent,
  runEnded,
  say,
  startToolServer,
  ToolServer,
} from '../../support/processing-fixtures';
import {
  approveThenCrashAt,
  CrashPoint,
  Parked,
  parkedAgent,
  settledRuns,
} from './consent-restart.helpers';

/** Issue 8 items 10, 11 and 14: the edges of consent and of a run's end, as an attacker (or bad luck) finds them. */
describe('security: exact consent edges', () => {
  let fake: FakeModelServer;
  let tools: ToolServer;
  let t: TestApp;
  beforeAll(async () => {
    fake = await startFakeModelServer();
    tools = await startToolServer();
    t = await startApp({ modelBaseUrl: fake.baseUrl });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
    await tools.close();
  });
  beforeEach(() => {
    fake.reset();
    tools.calls.length = 0;
  });

  it('a run that ends after its agent was deleted logs no ERROR', async () => {
    await tools.declare(t, 'slow_lookup');
    const id = await createAgent(t, fake, { tools: ['slow_lookup'], include_base_tools: false });
    let started!: () => void;
    const toolStarted = new Promise<void>((r) => (started = r));
    tools.handle('slow_lookup', async (_c, hungUp) => {
      started();
      await hungUp;
      return { body: 'late' };
    });
    fake.push({ tool_calls: [{ name: 'slow_lookup', arguments: {} }] });
    const errors = jest.spyOn(Logger.prototype, 'error');
    try {
      const run = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('look'))).body;
      await toolStarted;
      expect((await api(t, 'DELETE', `/v1/agents/${id}`)).status).toBe(200);
      expect(await runEnded(t, run.id)).toMatchObject({ status: 'cancelled' });
      expect(errors).not.toHaveBeenCalled();
    } finally {
      errors.mockRestore();
    }
  });

  it('approve, then crash before the tool started (20 times, at every point): after the restart the call runs once, no one is asked again; a started call stays "outcome unknown"', async () => {
    const first = await startApp({ keepDir: true });
    const dir = first.dir;
    const points: CrashPoint[] = [
      'before the continuation was created',
      'continuation running, approval not yet used',
      'continuation running, approval used, tool not claimed',
    ];
    const cases: { parked: Parked; point: CrashPoint }[] = [];
    try {
      await tools.declare(first, 'pay', { safety: 'side_effecting' });
      for (let i = 0; i < 22; i++) {
        // 20 approved calls that had not started, spread over the points; 2 that had started
        const point: CrashPoint = i < 20 ? points[i % points.length] : 'tool claimed (started)';
        const parked = await parkedAgent(first, i);
        await approveThenCrashAt(first, parked, point);
        cases.push({ parked, point });
      }
      expect(tools.calls).toEqual([]);
    } finally {
      await first.close();
    }

    const second = await startApp({ dir });
    try {
      for (const { parked, point } of cases) {
        const runs = await settledRuns(second, parked.agentId);
        const history = (
          await api(second, 'GET', `/v1/agents/${parked.agentId}/messages?order=asc&limit=100`)
        ).body as any[];
        const returns = history.filter(
          (m) => m.message_type === 'tool_return_message' && m.tool_call_id === parked.toolCallId,
        );
        const ran = tools.calls.filter((c) => c.tool_call_id === parked.toolCallId);
        const requests = (await api(second, 'GET', '/v1/consent/requests?status=all')).body.filter(
          (r: any) => r.agent_id === parked.agentId,
        );
        // never asked again: the one request, approved
        expect(requests).toHaveLength(1);
        expect(requests[0]).toMatchObject({ id: parked.requestId, status: 'approved' });
        if (point === 'tool claimed (started)') {
          expect({ point, ran: ran.length }).toEqual({ point, ran: 0 });
          expect(returns.map((m) => m.tool_return)).toEqual([OUTCOME_UNKNOWN]);
          continue;
        }
        expect({ point, ran: ran.length }).toEqual({ point, ran: 1 });
        expect(returns).toHaveLength(1);
        expect(returns[0]).toMatchObject({ status: 'success' });
        expect(history.some((m) => [OUTCOME_UNKNOWN, NOT_STARTED].includes(m.tool_return))).toBe(
          false,
        );
        expect(runs.at(-1)).toMatchObject({ status: 'completed', stop_reason: 'end_turn' });
      }
    } finally {
      await second.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('approve and cancel racing (20 times, REST and in-band decisions): exactly one wins, the loser gets 409 with the winner, and what was answered is what happened', async () => {
    await tools.declare(t, 'pay', { safety: 'side_effecting' }).catch(() => undefined);
    const outcomes: string[] = [];
    for (let i = 0; i < 20; i++) {
      const p = await parkedAgent(t, 100 + i);
      const inBand = i % 2 === 1;
      const decide = () =>
        inBand
          ? api(t, 'POST', `/v1/agents/${p.agentId}/messages`, {
              messages: [
                {
                  type: 'approval',
                  approvals: [{ type: 'approval', tool_call_id: p.toolCallId, approve: true }],
                },
              ],
            })
          : api(t, 'POST', `/v1/consent/requests/${p.requestId}/decision`, {
              decision: 'approve_once',
            });
      const cancelIt = () => api(t, 'POST', `/v1/agents/${p.agentId}/messages/cancel`, {});
      // Both in flight at once. The decision's path is shorter, so on every other pair the cancel gets a
      // head start of a few ms (varied): then either may win, and both sides are exercised.
      const headStart = [0, 2, 4, 6, 8][i % 5];
      const [decision, cancel] =
        i % 4 < 2
          ? await Promise.all([decide(), cancelIt()])
          : (
              await Promise.all([
                cancelIt(),
                new Promise((r) => setTimeout(r, headStart)).then(decide),
              ])
            ).reverse();
      const runs = await settledRuns(t, p.agentId);
      const last = runs.at(-1);
      const ran = tools.calls.filter((c) => c.tool_call_id === p.toolCallId).length;
      const request = (await api(t, 'GET', `/v1/consent/requests/${p.requestId}`)).body;
      const seen = {
        i,
        decision: decision.status,
        cancel: cancel.status,
        ran,
        last: last.stop_reason,
      };
      if (decision.status === 200 && cancel.status === 409) {
        // the decision won: the call ran once and the batch ended normally
        expect(cancel.body).toMatchObject({ code: 'ALREADY_RESOLVED' });
        expect(cancel.body.details).toMatchObject({ request_id: p.requestId });
        expect(request).toMatchObject({ status: 'approved', decided_by: 'default' });
        expect(seen).toMatchObject({ ran: 1, last: 'end_turn' });
        outcomes.push('decision');
      } else if (decision.status === 409 && cancel.status === 200) {
        // the cancel won: the call never ran, the batch ended cancelled, the decision was told why
        expect(decision.body).toMatchObject({ code: 'ALREADY_RESOLVED' });
        expect(cancel.body).toEqual({ [p.runId]: 'cancelled' });
        expect(request).toMatchObject({ status: 'denied', decided_by: 'system' });
        expect(seen).toMatchObject({ ran: 0, last: 'cancelled' });
        outcomes.push('cancel');
      } else {
        // only in sequence, never in the race: the approved call had already run when the cancel came,
        // which then stopped the rest of the batch (the run it names ends cancelled)
        expect(seen).toMatchObject({ decision: 200, cancel: 200, ran: 1, last: 'cancelled' });
        expect(Object.keys(cancel.body)).toEqual([last.id]);
        outcomes.push('sequential');
      }
    }
    console.log(`approve/cancel race winners: ${JSON.stringify(countBy(outcomes))}`);
  }, 60_000);

  it('past consent.max_pending_per_agent a call needing consent is refused with a clear tool error and never runs', async () => {
    const small = await startApp({ overrides: { consent: { max_pending_per_agent: 2 } } });
    try {
      await tools.declare(small, 'pay', { safety: 'side_effecting' });
      const calls = ['1', '2', '3'].map((q) => ({ name: 'pay', arguments: { q } }));
      const agent = await api(small, 'POST', '/v1/agents/', {
        name: 'many-asks',
        model: 'scripted/many',
        tools: ['pay'],
        include_base_tools: false,
        tool_rules: [{ type: 'requires_approval', tool_name: 'pay' }],
        model_script: [{ tool_calls: calls }],
      });
      const res = await api(small, 'POST', `/v1/agents/${agent.body.id}/messages`, say('pay'));
      expect(res.body.stop_reason.stop_reason).toBe('requires_approval');
      const pending = (await api(small, 'GET', '/v1/consent/requests?status=all')).body;
      expect(pending.map((r: any) => r.arguments.q)).toEqual(['1', '2']);
      const refused = res.body.messages.find((m: any) => m.message_type === 'tool_return_message');
      expect(refused).toMatchObject({ status: 'error', name: 'pay' });
      expect(refused.tool_return).toContain('TOO_MANY_PENDING_CONSENT');
      expect(tools.calls).toEqual([]);
    } finally {
      await small.close();
    }
  });
});

function countBy(xs: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}
