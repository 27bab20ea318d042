/* eslint-disable @typescript-eslint/no-explicit-any */
import { rmSync } from 'node:fs';
import { DataSource, type EntityTarget, type ObjectLiteral } from 'typeorm';
import { AgentEntity } from '../../../src/agents/agent.entity';
import { BlockEntity } from '../../../src/agents/block.entity';
import { STORED_BYTES_COLUMNS, storedBytes } from '../../../src/core/limits/stored-bytes';
import {
  BYTES_COUNTED,
  bytesTriggerNames,
  StoredBytes1765190000000,
} from '../../../src/database/migrations/1765190000000-StoredBytes';
import { sqlTable } from '../../../src/database/sql-names';
import { rerunMigration, triggerNames } from '../../support/db-triggers';
import { PassageEntity } from '../../../src/memory/archival.entities';
import { MessageEntity } from '../../../src/processing/entities/message.entity';
import { RunEntity } from '../../../src/processing/entities/run.entity';
import { startApp, TestApp } from '../../support/app-harness';
import {
  api,
  say,
  startToolServer,
  TENANT_A,
  TENANT_B,
  type ToolServer,
} from '../../support/processing-fixtures';

const TENANT_C = { authorization: 'Bearer key-c' };
const TENANT_D = { authorization: 'Bearer key-d' };
const KEYS = {
  auth: {
    api_keys: [
      { key: 'key-a', tenant: 'tenant-a' },
      { key: 'key-b', tenant: 'tenant-b' },
      { key: 'key-c', tenant: 'tenant-c' },
      { key: 'key-d', tenant: 'tenant-d' },
    ],
  },
};
const LIMIT = 40_000;

/** The tenant's `stored_bytes` as `GET /v1/quotas` answers it. */
async function bytesOf(t: TestApp, headers: Record<string, string>): Promise<any> {
  const res = await api(t, 'GET', '/v1/quotas', undefined, headers);
  return res.body.quotas.find((q: any) => q.quota === 'stored_bytes');
}

/** What the tenant's rows hold, counted again from the tables (as the migration's backfill counts). */
async function recount(t: TestApp, tenant: string): Promise<number> {
  const schema = t.config.database.schema;
  let n = 0;
  for (const c of BYTES_COUNTED) {
    const sum = c.columns.map((col) => `COALESCE(octet_length("${col}"), 0)`).join(' + ');
    const [row] = await t.app
      .get(DataSource)
      .query(
        `SELECT COALESCE(SUM(${sum}), 0) AS n FROM ${sqlTable(schema, c.table)} WHERE tenant_id = '${tenant}'`,
      );
    n += Number(row.n);
  }
  return n;
}

/** The database's counter of the tenant: its stripes summed. */
async function counter(t: TestApp, tenant: string): Promise<number> {
  const [row] = await t.app
    .get(DataSource)
    .query(
      `SELECT COALESCE(SUM(used), 0) AS n FROM ${sqlTable(t.config.database.schema, 'tenant_bytes')} WHERE tenant_id = '${tenant}'`,
    );
  return Number(row.n);
}

/** An agent answering every message with a short text (its scripted model), created for the tenant. */
async function talker(t: TestApp, headers: Record<string, string>, over: object = {}) {
  const res = await api(
    t,
    'POST',
    '/v1/agents/',
    {
      name: `talker-${Math.random().toString(36).slice(2)}`,
      agent_type: 'letta_v1_agent',
      include_base_tools: false,
      model_script: [{ content: 'noted' }],
      ...over,
    },
    headers,
  );
  expect(res.status).toBe(200);
  return res.body.id as string;
}

/**
 * A tenant could fill the operator's disk: the quotas bounded how many agents, blocks or passages it kept,
 * never how large they were, and nothing bounded its messages (each request up to server.body_limit_bytes,
 * each tool return up to tools.http.max_response_bytes, without end). Now the database keeps each tenant's
 * stored bytes (`quotas.stored_bytes`) in the writing transaction, new messages, passages, blocks and
 * agents past it are 409 QUOTA_EXCEEDED with nothing stored, a run past it ends before its next model
 * call, and deleting an agent (its messages with it), passages or blocks makes room.
 */
describe('security: per-tenant stored bytes (quotas.stored_bytes)', () => {
  let t: TestApp;
  let tools: ToolServer;

  beforeAll(async () => {
    tools = await startToolServer();
    t = await startApp({
      overrides: {
        ...KEYS,
        quotas: {
          stored_bytes: LIMIT,
          tenants: { 'tenant-c': { stored_bytes: 30_000 }, 'tenant-d': { stored_bytes: 8000 } },
        },
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await tools.close();
  });

  it('tenant A posts 4 KB messages until refused: 409 QUOTA_EXCEEDED, nothing of it stored; B unaffected; deleting the agent makes room', async () => {
    const agent = await talker(t, TENANT_A);
    const big = say('x'.repeat(4000));
    const accepted: string[] = [];
    let refused: any = null;
    for (let i = 0; i < 20 && !refused; i++) {
      const res = await api(t, 'POST', `/v1/agents/${agent}/messages`, big, TENANT_A);
      if (res.status === 200) accepted.push(res.body.messages.at(-1).run_id);
      else refused = res;
    }
    // each message takes ~8 KB (its run keeps the request, the history a copy): 4 fit in 40 KB
    expect(accepted).toHaveLength(4);
    expect(refused).toMatchObject({
      status: 409,
      body: {
        code: 'QUOTA_EXCEEDED',
        details: { quota: 'stored_bytes', limit: LIMIT, setting: 'quotas.stored_bytes' },
      },
    });
    expect(refused.body.details.used).toBeGreaterThan(LIMIT);
    expect(refused.body.message).toContain('quotas.stored_bytes');
    // the refused request stored nothing: no run, no message, the same bytes
    const usedA = await bytesOf(t, TENANT_A);
    expect(usedA).toMatchObject({ limit: LIMIT, setting: 'quotas.stored_bytes', scope: 'tenant' });
    expect(usedA.used).toBeLessThanOrEqual(LIMIT);
    expect(usedA.used).toBe(await recount(t, 'tenant-a'));
    const runs = await api(t, 'GET', `/v1/runs/?agent_ids=${agent}&limit=100`, undefined, TENANT_A);
    expect(runs.body).toHaveLength(4);
    expect(runs.body.every((r: any) => r.status === 'completed')).toBe(true);
    // again: refused again (a client retrying does not get through)
    expect(
      (await api(t, 'POST', `/v1/agents/${agent}/messages/async`, big, TENANT_A)).body.code,
    ).toBe('QUOTA_EXCEEDED');

    // tenant B stores the same, against its own bytes
    const other = await talker(t, TENANT_B);
    for (let i = 0; i < 3; i++)
      expect((await api(t, 'POST', `/v1/agents/${other}/messages`, big, TENANT_B)).status).toBe(
        200,
      );
    expect((await bytesOf(t, TENANT_A)).used).toBe(usedA.used);

    // deleting the agent deletes its messages and its runs' copies of the requests: room again
    expect((await api(t, 'DELETE', `/v1/agents/${agent}`, undefined, TENANT_A)).status).toBe(200);
    const after = (await bytesOf(t, TENANT_A)).used;
    expect(after).toBeLessThan(2000); // what is left: the runs' ids and settings
    expect(after).toBe(await recount(t, 'tenant-a'));
    const run = await api(t, 'GET', `/v1/runs/${accepted[0]}`, undefined, TENANT_A);
    expect(run.body).toMatchObject({ status: 'completed' }); // runs stay, for the audit
    const again = await talker(t, TENANT_A);
    expect((await api(t, 'POST', `/v1/agents/${again}/messages`, big, TENANT_A)).status).toBe(200);
  });

  it('an agent file whose history does not fit: 409 QUOTA_EXCEEDED, and no agent of it is left', async () => {
    // B's agent of the test above: ~12 KB of history, imported by D (8 KB)
    const [agent] = (await api(t, 'GET', '/v1/agents/', undefined, TENANT_B)).body;
    const file = await api(t, 'GET', `/v1/agents/${agent.id}/export`, undefined, TENANT_B);
    expect(file.status).toBe(200);
    const upload = async (af: unknown) => {
      const form = new FormData();
      form.append('file', new Blob([JSON.stringify(af)], { type: 'application/json' }), 'a.af');
      const res = await fetch(`${t.baseUrl}/v1/agents/import`, {
        method: 'POST',
        headers: TENANT_D,
        body: form,
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const res = await upload(file.body);
    expect(res).toMatchObject({
      status: 409,
      body: { code: 'QUOTA_EXCEEDED', details: { quota: 'stored_bytes', limit: 8000 } },
    });
    expect((await api(t, 'GET', '/v1/agents/', undefined, TENANT_D)).body).toEqual([]);
    expect((await bytesOf(t, TENANT_D)).used).toBe(0);
    // without its history it fits
    file.body.agents[0].messages = [];
    expect((await upload(file.body)).status).toBe(200);
  });

  it('a run whose tool returns fill the quota ends before its next model call (error quota_exceeded); every call it stored has its return', async () => {
    tools.handle('dump', () => ({ body: 'y'.repeat(10_000) }));
    await api(
      t,
      'POST',
      '/v1/tools/',
      {
        name: 'dump',
        description: 'returns 10 KB',
        parameters: { type: 'object', properties: {} },
        safety: 'read_only',
        kind: 'http',
        http: { url: `${tools.baseUrl}/tool/dump`, method: 'POST' },
      },
      TENANT_C,
    );
    const call = { tool_calls: [{ name: 'dump', arguments: {} }] };
    const agent = await talker(t, TENANT_C, {
      tools: ['dump'],
      model_script: [call, call, call, call, call, call, { content: 'done' }],
    });
    const res = await api(t, 'POST', `/v1/agents/${agent}/messages`, say('dump it'), TENANT_C);
    expect(res).toMatchObject({
      status: 409,
      body: {
        code: 'QUOTA_EXCEEDED',
        details: { stop_reason: 'error', error_type: 'quota_exceeded' },
      },
    });
    const runId = res.body.details.run_id;
    const run = (await api(t, 'GET', `/v1/runs/${runId}`, undefined, TENANT_C)).body;
    expect(run).toMatchObject({ status: 'failed', stop_reason: 'error' });
    expect(run.metadata.error).toMatchObject({ error_type: 'quota_exceeded' });
    expect(run.metadata.error.detail).toContain('quotas.tenants.tenant-c.stored_bytes');
    // 10 KB a call against 30 KB: the third return passes the quota, and no fourth call is made
    const messages = (await api(t, 'GET', `/v1/runs/${runId}/messages`, undefined, TENANT_C)).body;
    const calls = messages.filter((m: any) => m.message_type === 'tool_call_message');
    const returns = messages.filter((m: any) => m.message_type === 'tool_return_message');
    expect(calls).toHaveLength(3);
    expect(returns.map((m: any) => m.tool_call_id)).toEqual(
      calls.map((m: any) => m.tool_call.tool_call_id),
    );
    expect(tools.calls.filter((c) => c.name === 'dump')).toHaveLength(3);
    expect((await bytesOf(t, TENANT_C)).used).toBe(await recount(t, 'tenant-c'));
  });

  it('past the quota: blocks, passages, agents and growing edits are refused, the memory tool gets an error; an edit that adds nothing passes', async () => {
    // tenant C is past its 30 KB (the run above)
    const agent = (await api(t, 'GET', '/v1/agents/?limit=1', undefined, TENANT_C)).body[0].id;
    const refusedBytes = (res: any) => {
      expect(res).toMatchObject({
        status: 409,
        body: { code: 'QUOTA_EXCEEDED', details: { quota: 'stored_bytes', limit: 30_000 } },
      });
    };
    refusedBytes(await api(t, 'POST', '/v1/blocks/', { label: 'n', value: 'v' }, TENANT_C));
    refusedBytes(
      await api(t, 'POST', `/v1/agents/${agent}/archival-memory`, { text: 'fact' }, TENANT_C),
    );
    refusedBytes(await api(t, 'POST', '/v1/agents/', { name: 'one-more' }, TENANT_C));
    refusedBytes(
      await api(t, 'PATCH', `/v1/agents/${agent}`, { description: 'longer now' }, TENANT_C),
    );
    refusedBytes(await api(t, 'POST', `/v1/agents/${agent}/messages`, say('hi'), TENANT_C));
    // shorter is fine
    expect(
      (await api(t, 'PATCH', `/v1/agents/${agent}`, { system: 'terse' }, TENANT_C)).status,
    ).toBe(200);
    expect((await bytesOf(t, TENANT_C)).used).toBe(await recount(t, 'tenant-c'));
    expect(await api(t, 'GET', '/v1/blocks/?label=n', undefined, TENANT_C)).toMatchObject({
      body: [],
    });
  });

  it('the memory tool of a run at the quota gets an error the model reads; the block is unchanged', async () => {
    const agent = await talker(t, TENANT_B, {
      tools: ['core_memory_append'],
      memory_blocks: [{ label: 'human', value: 'Ada' }],
      model_script: [
        {
          tool_calls: [
            {
              name: 'core_memory_append',
              arguments: { label: 'human', content: 'z'.repeat(3000) },
            },
          ],
        },
        { content: 'could not remember' },
      ],
    });
    // B fills its quota up to less than 3 KB with an archival passage (A's bytes are not B's)
    const room = LIMIT - (await bytesOf(t, TENANT_B)).used;
    expect(room).toBeGreaterThan(3000);
    const fill = await api(
      t,
      'POST',
      `/v1/agents/${agent}/archival-memory`,
      { text: 'p'.repeat(room - 1500) },
      TENANT_B,
    );
    expect(fill.status).toBe(200);
    // the run's own request takes some of what is left; the append (3 KB) does not fit, and its call
    // (3 KB of arguments) took the tenant past the quota: the run ends before its next model call
    const res = await api(t, 'POST', `/v1/agents/${agent}/messages`, say('remember'), TENANT_B);
    expect(res.body).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      details: { error_type: 'quota_exceeded' },
    });
    const messages = (
      await api(t, 'GET', `/v1/runs/${res.body.details.run_id}/messages`, undefined, TENANT_B)
    ).body;
    const ret = messages.find((m: any) => m.message_type === 'tool_return_message');
    expect(ret).toMatchObject({ status: 'error' });
    expect(ret.tool_return).toContain('quotas.stored_bytes');
    const human = await api(
      t,
      'GET',
      `/v1/agents/${agent}/core-memory/blocks/human`,
      undefined,
      TENANT_B,
    );
    expect(human.body.value).toBe('Ada');
    expect((await bytesOf(t, TENANT_B)).used).toBe(await recount(t, 'tenant-b'));
  });

  it('the counter is the rows: the app measures a row as the triggers do, and every counted table has its triggers', async () => {
    const ds = t.app.get(DataSource);
    expect(
      Object.fromEntries(
        Object.entries(STORED_BYTES_COLUMNS).map(([k, cols]) => [k, cols.map((c) => c.name)]),
      ),
    ).toEqual(Object.fromEntries(BYTES_COUNTED.map((c) => [c.table, c.columns])));
    const entities: [keyof typeof STORED_BYTES_COLUMNS, EntityTarget<ObjectLiteral>][] = [
      ['messages', MessageEntity],
      ['runs', RunEntity],
      ['passages', PassageEntity],
      ['blocks', BlockEntity],
      ['agents', AgentEntity],
    ];
    for (const tenant of ['tenant-a', 'tenant-b', 'tenant-c', 'tenant-d', 'default']) {
      let measured = 0;
      for (const [table, entity] of entities)
        for (const row of await ds.getRepository(entity).findBy({ tenant_id: tenant }))
          measured += storedBytes(table, row);
      const stored = await counter(t, tenant);
      expect([tenant, stored]).toEqual([tenant, await recount(t, tenant)]);
      // (A's deleted agent's runs were rewritten by SQL: PostgreSQL spells their JSON with spaces)
      if (tenant !== 'tenant-a') expect([tenant, measured]).toEqual([tenant, stored]);
    }
    const have = await triggerNames(ds, t.config.database.schema);
    expect(BYTES_COUNTED.flatMap(bytesTriggerNames).filter((n) => !have.has(n))).toEqual([]);
  });
});

/** A database of an earlier version gets each tenant's bytes when it is migrated. */
describe('migration: StoredBytes counts what each tenant stored before it', () => {
  it('down and up again on a database with messages, runs, passages, blocks and agents: the counters are the rows', async () => {
    let t = await startApp({ keepDir: true, overrides: KEYS });
    const { dir, config } = t;
    try {
      for (const [headers, n] of [
        [TENANT_A, 2],
        [TENANT_B, 1],
      ] as const) {
        const agent = await talker(t, headers, { memory_blocks: [{ label: 'human', value: 'é' }] });
        for (let i = 0; i < n; i++)
          await api(t, 'POST', `/v1/agents/${agent}/messages`, say(`hello ${i}`), headers);
        await api(t, 'POST', `/v1/agents/${agent}/archival-memory`, { text: 'fact' }, headers);
      }
      const before = [await counter(t, 'tenant-a'), await counter(t, 'tenant-b')];
      expect(before[0]).toBeGreaterThan(before[1]);
      await t.close();
      // the database as the previous version left it, then this migration on it
      await rerunMigration(config, new StoredBytes1765190000000(), 'tenant_bytes');
      t = await startApp({ dir, overrides: KEYS });
      expect([await counter(t, 'tenant-a'), await counter(t, 'tenant-b')]).toEqual(before);
      expect(before).toEqual([await recount(t, 'tenant-a'), await recount(t, 'tenant-b')]);
      // and the triggers count on
      await api(t, 'POST', '/v1/blocks/', { label: 'later', value: 'abc' }, TENANT_B);
      expect(await counter(t, 'tenant-b')).toBe(await recount(t, 'tenant-b'));
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * Exact across instances (PostgreSQL): two instances on one database take a tenant's messages at once, at
 * its last bytes. Each new message is checked in its storing transaction, after the tenant's earlier
 * checks on any instance (a transaction lock per tenant): of 12 sent at once through both, exactly as many
 * are stored as fit, never one more.
 */
describe('security: stored bytes across two instances (PostgreSQL)', () => {
  const pgOnly = process.env.TEST_DATABASE_URL ? it : it.skip;
  const limit = 50_000;

  pgOnly(
    '12 messages at once through two instances at the last bytes: exactly as many pass as fit',
    async () => {
      const tools = await startToolServer();
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let holding!: () => void;
      const held = new Promise<void>((r) => (holding = r));
      tools.handle('hold', async () => {
        holding();
        await released;
        return { body: 'done' };
      });
      const overrides = (id: string) => ({
        ...KEYS,
        quotas: { stored_bytes: limit },
        cluster: { instance_id: id },
      });
      const one = await startApp({ keepDir: true, overrides: overrides('one') });
      const two = await startApp({ dir: one.dir, overrides: overrides('two') });
      try {
        await api(
          one,
          'POST',
          '/v1/tools/',
          {
            name: 'hold',
            description: 'holds the agent busy',
            parameters: { type: 'object', properties: {} },
            safety: 'read_only',
            kind: 'http',
            http: { url: `${tools.baseUrl}/tool/hold`, method: 'POST' },
          },
          TENANT_A,
        );
        const agent = await talker(one, TENANT_A, {
          tools: ['hold'],
          model_script: [{ tool_calls: [{ name: 'hold', arguments: {} }] }, { content: 'done' }],
        });
        // the agent is busy in its tool: the messages below wait behind it, their history not yet written
        await api(one, 'POST', `/v1/agents/${agent}/messages/async`, say('hold on'), TENANT_A);
        await held;
        const message = say('m'.repeat(1000));
        const start = await counter(one, 'tenant-a');
        expect(
          (await api(two, 'POST', `/v1/agents/${agent}/messages/async`, message, TENANT_A)).status,
        ).toBe(202);
        const run = (await counter(one, 'tenant-a')) - start; // a queued message: its run's bytes
        const history = Buffer.byteLength(
          JSON.stringify({ content: message.messages[0].content, _input: true }),
        );
        // fill up to the room of five and a half more
        const archive = (await api(one, 'POST', '/v1/archives/', { name: 'filler' }, TENANT_A))
          .body;
        const room = Math.floor(5.5 * run) + history;
        const fill = limit - (await counter(one, 'tenant-a')) - room - 2; // (its tags: "[]")
        expect(
          (
            await api(
              one,
              'POST',
              `/v1/archives/${archive.id}/passages`,
              { text: 'f'.repeat(fill) },
              TENANT_A,
            )
          ).status,
        ).toBe(200);
        const before = await counter(one, 'tenant-a');
        const fits = Math.floor((limit - before - history) / run);
        expect(fits).toBe(5);

        const answers = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            api(i % 2 ? two : one, 'POST', `/v1/agents/${agent}/messages/async`, message, TENANT_A),
          ),
        );
        expect(answers.filter((a) => a.status === 202)).toHaveLength(fits);
        const refused = answers.filter((a) => a.status === 409);
        expect(refused).toHaveLength(12 - fits);
        expect(refused.every((a) => a.body.details.quota === 'stored_bytes')).toBe(true);
        expect(await counter(one, 'tenant-a')).toBe(before + fits * run);
        expect(await counter(two, 'tenant-a')).toBe(await recount(two, 'tenant-a'));
      } finally {
        release();
        await two.close();
        await one.close();
        await tools.close();
        rmSync(one.dir, { recursive: true, force: true });
      }
    },
  );
});
