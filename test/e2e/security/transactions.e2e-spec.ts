/* eslint-disable @typescript-eslint/no-explicit-any */
import { DataSource } from 'typeorm';
import { AgentsService } from '../../../src/agents/agents.service';
import { GroupCommit } from '../../../src/database/group-commit';
import { LastExecutionEntity } from '../../../src/rules/executor-state.entities';
import { startApp, TestApp } from '../../support/app-harness';

/**
 * One transaction discipline (issue 8 item 15): concurrent creates of one tool name leave exactly one
 * row, the loser gets 409 TOOL_EXISTS (never a 500), and a run in flight at the same time is unharmed.
 * On SQLite (one connection) and, with TEST_DATABASE_URL, on PostgreSQL.
 */
describe('security: transactions do not interleave', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(t.baseUrl + path, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  const tool = (name: string) => ({
    name,
    description: 'looks things up',
    safety: 'read_only',
    kind: 'http',
    http: { url: 'http://127.0.0.1:9/lookup', method: 'POST' },
    parameters: { type: 'object', properties: { q: { type: 'string' } } },
  });

  it('two concurrent creates of one tool name: one 200, one 409 TOOL_EXISTS, one row; a run in flight ends normally', async () => {
    const step = { tool_calls: [{ name: 'send_message', arguments: { message: 'working' } }] };
    const agent = await call('POST', '/v1/agents/', {
      name: 'bystander',
      include_base_tools: false,
      tools: ['send_message'],
      tool_rules: [{ type: 'continue_loop', tool_name: 'send_message' }],
      model_script: [step, step, step, step, step, { content: 'done' }],
      max_steps: 10,
    });
    expect(agent.status).toBe(200);

    for (let round = 0; round < 10; round++) {
      const name = `lookup_${round}`;
      const run = call('POST', `/v1/agents/${agent.body.id}/messages`, {
        messages: [{ role: 'user', content: `round ${round}` }],
      });
      const creates = await Promise.all([
        call('POST', '/v1/tools/', tool(name)),
        call('POST', '/v1/tools/', tool(name)),
      ]);
      expect(creates.map((c) => c.status).sort()).toEqual([200, 409]);
      const loser = creates.find((c) => c.status === 409)!;
      expect(loser.body).toEqual({
        code: 'TOOL_EXISTS',
        message: expect.stringContaining(name),
        details: { name },
      });
      const listed = await call('GET', '/v1/tools/');
      expect(listed.body.filter((x: any) => x.name === name)).toHaveLength(1);

      const done = await run;
      expect(done.status).toBe(200);
      expect(done.body.stop_reason).toMatchObject({ stop_reason: 'end_turn' });
    }
  });

  it('the same agent file loaded twice at once (two instances booting) leaves one file agent', async () => {
    const agents = t.app.get(AgentsService);
    const doc = { name: 'from-file', system: 'You help.', include_base_tools: false };
    const loads = await Promise.all([agents.upsertFromFile(doc), agents.upsertFromFile(doc)]);
    expect(loads[0].agent.id).toBe(loads[1].agent.id);
    const listed = await call('GET', '/v1/agents/?name=from-file');
    expect(listed.body).toHaveLength(1);
  });

  it('one group commit upserting one key twice (two cooldown stamps of one tool): one statement, the newest wins', async () => {
    // PostgreSQL refuses an ON CONFLICT DO UPDATE that meets a row twice; the group was rolled back and
    // retried job by job, with a "query failed" in the log, each time two runs stamped the same tool
    const writes = t.app.get(GroupCommit);
    const row = (at: number) => ({
      agent_id: 'agent-upsert',
      tool_name: 'pay',
      tenant_id: 'default',
      at,
    });
    const ds = t.app.get(DataSource);
    const logged = jest.spyOn(ds.logger, 'logQueryError');
    await Promise.all(
      [1_000, 2_000, 3_000].map((at) =>
        writes.insert({
          entity: LastExecutionEntity,
          rows: [row(at)],
          conflictPaths: ['agent_id', 'tool_name'],
        }),
      ),
    );
    const stored = await ds.getRepository(LastExecutionEntity).findBy({ agent_id: 'agent-upsert' });
    expect(stored.map((r) => Number(r.at))).toEqual([3_000]);
    expect(logged).not.toHaveBeenCalled();
    logged.mockRestore();
  });
});
