/* eslint-disable @typescript-eslint/no-explicit-any */
import type { Server } from 'node:http';
import * as path from 'node:path';
import { startExampleToolServers } from '../../examples/tool-server';
import { startApp, TestApp } from '../support/app-harness';
import { api, say, types } from '../support/processing-fixtures';

/**
 * The README's tour, as a new user runs it: the shipped example agents and tools (config/agents, config/tools)
 * with the example tool server, offline on the scripted model.
 */
describe('README tour', () => {
  const root = path.join(__dirname, '..', '..');
  let t: TestApp;
  let servers: Server[] = [];

  beforeAll(async () => {
    servers = await startExampleToolServers().catch((e: NodeJS.ErrnoException) => {
      // `npm run example:tools` already serves the same routes on these ports: use it
      if (e.code === 'EADDRINUSE') return [];
      throw e;
    });
    t = await startApp({
      env: {
        AGENTS_DIR: path.join(root, 'config', 'agents'),
        TOOLS_DIR: path.join(root, 'config', 'tools'),
        REFUNDS_API_TOKEN: 'demo',
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  });

  const agentNamed = async (name: string): Promise<string> =>
    (await api(t, 'GET', `/v1/agents/?name=${name}`)).body[0].id;

  it('creates, lists and reads back an agent, and talks to it', async () => {
    const created = await api(t, 'POST', '/v1/agents/', {
      name: 'tour',
      system: 'You are helpful.',
      memory_blocks: [{ label: 'human', value: 'Ada' }],
      tags: ['demo'],
    });
    expect(created.status).toBe(200);
    const listed = (await api(t, 'GET', '/v1/agents/?tags=demo')).body;
    expect(listed.map((a: any) => a.name)).toEqual(['tour']);
    const read = (await api(t, 'GET', `/v1/agents/${created.body.id}`)).body;
    expect(read.memory.blocks[0]).toMatchObject({ label: 'human', value: 'Ada' });
    const reply = (await api(t, 'POST', `/v1/agents/${created.body.id}/messages`, say('hello')))
      .body;
    expect(reply.messages.at(-1)).toMatchObject({
      message_type: 'assistant_message',
      content: 'You said: hello',
    });
  });

  it('release bot: a deploy before the tests is refused, the model corrects itself; a repeat is refused', async () => {
    const bot = await agentNamed('release-bot');
    const res = (await api(t, 'POST', `/v1/agents/${bot}/messages`, say('ship billing v1.4.2')))
      .body;
    const returns = res.messages.filter((m: any) => m.message_type === 'tool_return_message');
    expect(returns.map((m: any) => [m.name, m.status])).toEqual([
      ['deploy', 'error'],
      ['run_tests', 'success'],
      ['deploy', 'success'],
      ['send_message', 'success'],
    ]);
    expect(returns[0].tool_return).toContain(
      '[ToolRuleViolation] deploy requires run_tests earlier in this pass',
    );
    expect(types(res.messages)).toContain('user_message'); // the heartbeat after the deploy
    expect(res.stop_reason.stop_reason).toBe('tool_rule');

    const again = (await api(t, 'POST', `/v1/agents/${bot}/messages`, say('once more'))).body;
    const deploys = again.messages.filter(
      (m: any) => m.message_type === 'tool_return_message' && m.name === 'deploy',
    );
    expect(deploys.every((m: any) => m.status === 'error')).toBe(true);
  });

  it('refund desk: parks for consent, a decision with a constrained grant lets the refund run', async () => {
    const desk = await agentNamed('refund-desk');
    const parked = (await api(t, 'POST', `/v1/agents/${desk}/messages`, say('refund A-1001'))).body;
    expect(parked.stop_reason.stop_reason).toBe('requires_approval');
    const pending = (await api(t, 'GET', '/v1/consent/requests?status=pending')).body;
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({ tool_name: 'issue_refund', scope: 'refunds' });

    const decided = await api(t, 'POST', `/v1/consent/requests/${pending[0].id}/decision`, {
      decision: 'approve_for_duration',
      seconds: 600,
      constraint: { type: 'object', properties: { amount_cents: { maximum: 5000 } } },
    });
    expect(decided.status).toBe(200);

    // the batch continues in a new run; wait for the agent to be free again
    for (;;) {
      const runs = (await api(t, 'GET', `/v1/runs/?agent_id=${desk}`)).body;
      if (runs.length >= 2 && runs.every((r: any) => ['completed', 'failed'].includes(r.status)))
        break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const history: any[] = (await api(t, 'GET', `/v1/agents/${desk}/messages?order=asc`)).body;
    const refund = history.find(
      (m: any) => m.message_type === 'tool_return_message' && m.name === 'issue_refund',
    );
    expect(refund).toMatchObject({ status: 'success' });
    expect(JSON.parse(refund.tool_return)).toMatchObject({ status: 'issued', amount_cents: 1999 });
    const grants = (await api(t, 'GET', `/v1/agents/${desk}/grants`)).body;
    expect(grants).toHaveLength(1);
    expect(grants[0]).toMatchObject({ scope: 'refunds', decision: 'approve_for_duration' });
  });
});
