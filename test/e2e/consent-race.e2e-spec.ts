/* eslint-disable @typescript-eslint/no-explicit-any */
import WebSocket from 'ws';
import { startApp, TestApp } from '../support/app-harness';
import { api, runEnded, say, startToolServer, ToolServer } from '../support/processing-fixtures';

/**
 * A consent request is pushed the moment it is made, before its run has finished parking. A client that
 * answers at once must still see the tool run: the batch resumes from what is stored, not from timing.
 */
describe('consent: a decision that arrives while the run is still parking', () => {
  let t: TestApp;
  let tools: ToolServer;

  beforeAll(async () => {
    t = await startApp();
    tools = await startToolServer();
    await tools.declare(t, 'pay', { safety: 'side_effecting' });
  });
  afterAll(async () => {
    await t.close();
    await tools.close();
  });

  it('approving on the consent.request frame at once runs the tool and finishes the batch', async () => {
    const ws = new WebSocket(`${t.baseUrl.replace('http', 'ws')}/v1/ws`);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    ws.on('message', (data) => {
      const f = JSON.parse((data as Buffer).toString('utf8'));
      if (f.type === 'consent.request') {
        ws.send(
          JSON.stringify({
            type: 'consent.decision',
            request_id: f.request.id,
            decision: 'approve_once',
          }),
        );
      }
    });
    ws.send(JSON.stringify({ type: 'subscribe' }));

    const agents = await Promise.all(
      [0, 1, 2].map(async (i) => {
        const agent = await api(t, 'POST', '/v1/agents/', {
          name: `racer-${i}`,
          model: 'scripted/race',
          tools: ['pay'],
          include_base_tools: false,
          tool_rules: [{ type: 'requires_approval', tool_name: 'pay' }],
          model_script: [{ tool_calls: [{ name: 'pay', arguments: { q: String(i) } }] }],
        });
        const run = await api(t, 'POST', `/v1/agents/${agent.body.id}/messages/async`, say('pay'));
        return { id: agent.body.id as string, runId: run.body.id as string };
      }),
    );
    for (const a of agents) {
      const first = await runEnded(t, a.runId);
      expect(first.stop_reason).toBe('requires_approval');
      // the continuation: the agent's newest run, once it has ended
      for (;;) {
        const runs = (await api(t, 'GET', `/v1/runs/?agent_id=${a.id}`)).body;
        if (runs.length === 2 && runs.every((r: any) => r.status === 'completed')) break;
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    expect(tools.calls.map((c) => c.arguments.q).sort()).toEqual(['0', '1', '2']);
    ws.close();
  });
});
