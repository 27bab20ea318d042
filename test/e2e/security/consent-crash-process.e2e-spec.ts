/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { NOT_STARTED, OUTCOME_UNKNOWN } from '../../../src/processing/run-recovery';
import { startToolServer, ToolServer } from '../../support/processing-fixtures';
import { startServer } from '../../support/server-process';

/** The real server in its own process, on a SQLite file in `dir`. */
const startIn = (dir: string) =>
  startServer({
    env: {
      SQLITE_PATH: path.join(dir, 'db.sqlite'),
      AGENTS_DIR: path.join(dir, 'agents'),
      TOOLS_DIR: path.join(dir, 'tools'),
      LOG_LEVEL: 'info',
    },
  });

async function call(url: string, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(url + p, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/**
 * Issue 8 item 10 with a real kill: the server process is SIGKILLed the moment the approval is answered
 * 200. Whether the tool had started by then is a matter of timing (the deterministic cases are in
 * consent-edges); either way, after the restart the call has run at most once, no one is asked again, and
 * an approved call is never reported "not run".
 */
describe('security: approve, then the server process is killed', () => {
  let tools: ToolServer;
  beforeAll(async () => {
    tools = await startToolServer();
  });
  afterAll(() => tools.close());

  it('SIGKILL right after the approval: after the restart the call ran exactly once or is "outcome unknown", never twice, never re-asked', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'agent-server-kill-'));
    let server = await startIn(dir);
    try {
      await call(server.url, 'POST', '/v1/tools/', {
        name: 'pay',
        description: 'pays',
        parameters: { type: 'object', properties: { q: { type: 'string' } } },
        safety: 'side_effecting',
        kind: 'http',
        http: { url: `${tools.baseUrl}/tool/pay`, method: 'POST' },
      });
      const agent = (
        await call(server.url, 'POST', '/v1/agents/', {
          name: 'killed',
          model: 'scripted/kill',
          tools: ['pay'],
          include_base_tools: false,
          tool_rules: [{ type: 'requires_approval', tool_name: 'pay' }],
          model_script: [
            { tool_calls: [{ name: 'pay', arguments: { q: 'x' } }] },
            { content: 'paid' },
          ],
        })
      ).body;
      const parked = await call(server.url, 'POST', `/v1/agents/${agent.id}/messages`, {
        messages: [{ role: 'user', content: 'pay' }],
      });
      expect(parked.body.stop_reason.stop_reason).toBe('requires_approval');
      const [request] = (await call(server.url, 'GET', '/v1/consent/requests')).body;
      const decided = await call(
        server.url,
        'POST',
        `/v1/consent/requests/${request.id}/decision`,
        {
          decision: 'approve_once',
        },
      );
      await server.kill('SIGKILL');
      expect(decided.status).toBe(200);
      const ranBeforeKill = tools.calls.length;

      server = await startIn(dir);
      let runs: any[] = [];
      for (;;) {
        runs = (await call(server.url, 'GET', `/v1/runs/?agent_id=${agent.id}&order=asc`)).body;
        const open = runs.some((r) => r.status === 'created' || r.status === 'running');
        if (!open && runs.at(-1).stop_reason !== 'requires_approval') break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const history = (
        await call(server.url, 'GET', `/v1/agents/${agent.id}/messages?order=asc&limit=100`)
      ).body as any[];
      const returns = history
        .filter(
          (m) =>
            m.message_type === 'tool_return_message' && m.tool_call_id === request.tool_call_id,
        )
        .map((m) => m.tool_return);
      const requests = (await call(server.url, 'GET', '/v1/consent/requests?status=all')).body;
      expect(requests).toHaveLength(1); // never asked again
      expect(tools.calls.length).toBeLessThanOrEqual(1); // never run twice
      expect(returns).toHaveLength(1);
      expect(returns[0]).not.toBe(NOT_STARTED);
      if (returns[0] === OUTCOME_UNKNOWN) {
        // it had started (its claim was written) before the kill: never run again
        expect(tools.calls.length).toBe(ranBeforeKill);
      } else {
        // it ran once: before the kill, or after the restart on the stored approval
        expect(tools.calls).toHaveLength(1);
        expect(runs.at(-1)).toMatchObject({ status: 'completed', stop_reason: 'end_turn' });
      }
    } finally {
      await server.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
