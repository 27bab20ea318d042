/* eslint-disable @typescript-eslint/no-explicit-any */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import * as path from 'node:path';
import { DataSource } from 'typeorm';
import {
  COUNTED_TABLES,
  TenantUsage1765143000000,
  usageTriggerNames,
} from '../../../src/database/migrations/1765143000000-TenantUsage';
import { sqlTable } from '../../../src/database/sql-names';
import { rerunMigration, triggerNames } from '../../support/db-triggers';
import { startApp, TestApp } from '../../support/app-harness';
import { api, say, TENANT_A, TENANT_B, TWO_TENANTS } from '../../support/processing-fixtures';

const block = (label: string) => ({ label, value: 'v' });

/** The database's counters of one tenant: quota → used. */
async function usage(t: TestApp, tenant: string): Promise<Record<string, number>> {
  const rows: { quota: string; used: number }[] = await t.app
    .get(DataSource)
    .query(
      `SELECT quota, used FROM ${sqlTable(t.config.database.schema, 'tenant_usage')} WHERE tenant_id = '${tenant}'`,
    );
  return Object.fromEntries(
    COUNTED_TABLES.map((c) => [c.quota, 0]).concat(rows.map((r) => [r.quota, Number(r.used)])),
  );
}

/** Each counted table's rows of the tenant, counted, against the database's counters. */
async function countsAndRows(ds: DataSource, schema: string | null, tenant: string) {
  const out: [string, number, number][] = [];
  for (const c of COUNTED_TABLES) {
    const where = `tenant_id = '${tenant}'${c.api_only ? ` AND source = 'api'` : ''}`;
    const [rows] = await ds.query(
      `SELECT COUNT(*) AS n FROM ${sqlTable(schema, c.table)} WHERE ${where}`,
    );
    const [usage] = await ds.query(
      `SELECT used FROM ${sqlTable(schema, 'tenant_usage')} WHERE tenant_id = '${tenant}' AND quota = '${c.quota}'`,
    );
    out.push([c.quota, Number(usage?.used ?? 0), Number(rows.n)]);
  }
  return out;
}

/**
 * A tenant round: a tenant could store without end what per-request bounds let through one request at a
 * time: blocks, archives, passages, conversations, identities (agents, tools, MCP servers, webhooks and
 * secrets had bounds, counted before the insert, which concurrent creates passed together). Now each is a
 * quota per tenant (`quotas.*`, others for some tenants in `quotas.tenants`), counted by the database and
 * checked in the creating transaction: past it 409 QUOTA_EXCEEDED naming the quota and its limit, and
 * nothing of the request is stored.
 */
describe('security: per-tenant quotas', () => {
  let t: TestApp;
  const usedOf = (tenant: string) => usage(t, tenant);

  beforeAll(async () => {
    t = await startApp({
      overrides: {
        ...TWO_TENANTS,
        quotas: {
          blocks: 4,
          archives: 2,
          passages: 5,
          conversations: 1,
          identities: 1,
          tenants: { 'tenant-b': { blocks: 10 } },
        },
      },
    });
  });
  afterAll(() => t.close());

  it("blocks past quotas.blocks → 409 QUOTA_EXCEEDED, an agent's own blocks counted; nothing of a refused request is stored", async () => {
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      { name: 'holder', memory_blocks: [block('human'), block('persona')] },
      TENANT_A,
    );
    expect(agent.status).toBe(200);
    for (const label of ['x', 'y'])
      expect((await api(t, 'POST', '/v1/blocks/', block(label), TENANT_A)).status).toBe(200);
    const over = await api(t, 'POST', '/v1/blocks/', block('z'), TENANT_A);
    expect(over).toMatchObject({
      status: 409,
      body: {
        code: 'QUOTA_EXCEEDED',
        details: { quota: 'blocks', limit: 4, used: 5, setting: 'quotas.blocks' },
      },
    });
    expect(over.body.message).toContain('quotas.blocks');
    // an agent whose blocks do not fit is not created; one that would gain a block is not changed
    const refused = await api(
      t,
      'POST',
      '/v1/agents/',
      { name: 'too-many', memory_blocks: [block('human')] },
      TENANT_A,
    );
    expect(refused.body).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'blocks' } });
    expect((await api(t, 'GET', '/v1/agents/?name=too-many', undefined, TENANT_A)).body).toEqual(
      [],
    );
    const grow = await api(
      t,
      'PATCH',
      `/v1/agents/${agent.body.id}`,
      { memory_blocks: [block('human'), block('persona'), block('extra')] },
      TENANT_A,
    );
    expect(grow.body.code).toBe('QUOTA_EXCEEDED');
    const kept = await api(t, 'GET', `/v1/agents/${agent.body.id}`, undefined, TENANT_A);
    expect(kept.body.memory.blocks.map((b: any) => b.label)).toEqual(['human', 'persona']);
    expect((await usedOf('tenant-a')).blocks).toBe(4);
    // an edit that adds no block passes at the limit
    const edit = await api(
      t,
      'PATCH',
      `/v1/agents/${agent.body.id}`,
      { description: 'still fits' },
      TENANT_A,
    );
    expect(edit.status).toBe(200);
    // tenant B has a larger quota of its own (quotas.tenants), A's use takes none of it
    for (let i = 0; i < 5; i++)
      expect((await api(t, 'POST', '/v1/blocks/', block(`b${i}`), TENANT_B)).status).toBe(200);
    // deleting the agent takes its blocks away (the database counts them): room again
    expect(
      (await api(t, 'DELETE', `/v1/agents/${agent.body.id}`, undefined, TENANT_A)).status,
    ).toBe(200);
    expect((await usedOf('tenant-a')).blocks).toBe(2);
    expect((await api(t, 'POST', '/v1/blocks/', block('z'), TENANT_A)).status).toBe(200);
  });

  it("tenant A reads GET /v1/quotas: nothing in it names the operator's machine (the instance id is hostname-pid by default)", async () => {
    // it answered `instance_id`, which is `<hostname>-<pid>` unless the operator sets cluster.instance_id
    expect(t.config.cluster.instance_id).toBe(`${hostname()}-${process.pid}`);
    const res = await api(t, 'GET', '/v1/quotas', undefined, TENANT_A);
    expect(res.status).toBe(200);
    const text = JSON.stringify(res.body);
    expect(text).not.toContain(t.config.cluster.instance_id);
    expect(text).not.toContain(`"${hostname()}`);
    // the quotas and nothing else: no field to carry an instance's name
    expect(Object.keys(res.body)).toEqual(['quotas']);
    for (const q of res.body.quotas)
      expect(Object.keys(q)).toEqual(['quota', 'used', 'limit', 'setting', 'scope']);
  });

  it('passages past quotas.passages: a batch that does not fit is refused whole; the archival tool gets an error', async () => {
    const archive = await api(t, 'POST', '/v1/archives/', { name: 'kb' }, TENANT_A);
    expect(archive.status).toBe(200);
    const batch = (n: number) =>
      api(
        t,
        'POST',
        `/v1/archives/${archive.body.id}/passages/batch`,
        { passages: Array.from({ length: n }, (_, i) => ({ text: `fact ${i}` })) },
        TENANT_A,
      );
    expect((await batch(3)).status).toBe(200);
    const refused = await batch(3);
    expect(refused).toMatchObject({
      status: 409,
      body: { code: 'QUOTA_EXCEEDED', details: { quota: 'passages', limit: 5, used: 6 } },
    });
    expect((await usedOf('tenant-a')).passages).toBe(3);
    expect((await batch(2)).status).toBe(200);

    // the model's archival_memory_insert at the quota: an error the model reads, nothing stored
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      {
        name: 'archivist',
        tools: ['archival_memory_insert'],
        include_base_tools: false,
        model_script: [
          { tool_calls: [{ name: 'archival_memory_insert', arguments: { content: 'one more' } }] },
          { content: 'could not store it' },
        ],
      },
      TENANT_A,
    );
    const res = await api(
      t,
      'POST',
      `/v1/agents/${agent.body.id}/messages`,
      say('remember'),
      TENANT_A,
    );
    const ret = res.body.messages.find((m: any) => m.message_type === 'tool_return_message');
    expect(ret.status).toBe('error');
    expect(ret.tool_return).toContain('quotas.passages');
    expect((await usedOf('tenant-a')).passages).toBe(5);

    // deleting the archive takes its passages with it: room again
    expect(
      (await api(t, 'DELETE', `/v1/archives/${archive.body.id}`, undefined, TENANT_A)).status,
    ).toBe(204);
    expect(await usedOf('tenant-a')).toMatchObject({ passages: 0, archives: 0 });
    expect(
      (
        await api(
          t,
          'POST',
          `/v1/agents/${agent.body.id}/archival-memory`,
          { text: 'fits now' },
          TENANT_A,
        )
      ).status,
    ).toBe(200);
    expect(await usedOf('tenant-a')).toMatchObject({ passages: 1, archives: 1 });
  });

  it('archives, conversations and identities past their quotas → 409 QUOTA_EXCEEDED naming each', async () => {
    expect((await api(t, 'POST', '/v1/archives/', { name: 'second' }, TENANT_A)).status).toBe(200);
    const archive = await api(t, 'POST', '/v1/archives/', { name: 'third' }, TENANT_A);
    expect(archive.body).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'archives' } });

    const agentId = (await api(t, 'POST', '/v1/agents/', { name: 'talker' }, TENANT_A)).body.id;
    const conv = () => api(t, 'POST', `/v1/conversations/?agent_id=${agentId}`, {}, TENANT_A);
    const first = await conv();
    expect(first.status).toBe(200);
    expect((await conv()).body).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      details: { quota: 'conversations', limit: 1 },
    });
    const fork = await api(t, 'POST', `/v1/conversations/${first.body.id}/fork`, {}, TENANT_A);
    expect(fork.body.code).toBe('QUOTA_EXCEEDED');

    const identity = (key: string) =>
      api(
        t,
        'POST',
        '/v1/identities/',
        { identifier_key: key, name: key, identity_type: 'user' },
        TENANT_A,
      );
    expect((await identity('ada')).status).toBe(200);
    expect((await identity('bob')).body).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      details: { quota: 'identities', limit: 1 },
    });
  });

  it('creates sent at once at the limit: exactly as many pass as fit', async () => {
    const before = (await usedOf('tenant-b')).blocks;
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        api(t, 'POST', '/v1/blocks/', block(`race${i}`), TENANT_B),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(10 - before);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(12 - (10 - before));
    expect((await usedOf('tenant-b')).blocks).toBe(10);
  });

  it("the database's counts are the rows, and every counted table has its triggers", async () => {
    // replacing what exists counts nothing: a secret set twice, an agent's secrets given again
    for (const value of ['one', 'two'])
      expect((await api(t, 'PUT', '/v1/secrets/TOKEN', { value }, TENANT_A)).status).toBe(200);
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      { name: 'keys', secrets: { K1: 'a' } },
      TENANT_A,
    );
    for (const secrets of [{ K1: 'b', K2: 'c' }, { K2: 'd' }])
      expect(
        (await api(t, 'PATCH', `/v1/agents/${agent.body.id}`, { secrets }, TENANT_A)).status,
      ).toBe(200);
    expect((await usedOf('tenant-a')).secrets).toBe(2);
    const ds = t.app.get(DataSource);
    const schema = t.config.database.schema;
    for (const tenant of ['tenant-a', 'tenant-b'])
      for (const [quota, used, rows] of await countsAndRows(ds, schema, tenant))
        expect([quota, used]).toEqual([quota, rows]);
    const have = await triggerNames(ds, schema);
    expect(COUNTED_TABLES.flatMap(usageTriggerNames).filter((n) => !have.has(n))).toEqual([]);
  });
});

/**
 * The operator is trusted: what config/agents declares is loaded at boot whatever the tenant stores (a
 * tenant at its quota must not stop the server), and file agents are not counted as the tenant's agents.
 * Their memory blocks are counted, so they take the tenant's room.
 */
describe("security: quotas never refuse the operator's agent files", () => {
  let t: TestApp;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'quota-files-'));
    mkdirSync(path.join(dir, 'agents'));
    writeFileSync(
      path.join(dir, 'agents', 'helper.yaml'),
      'name: helper\nmodel: scripted/helper\nmemory_blocks:\n  - { label: human, value: a }\n  - { label: persona, value: b }\n',
    );
    t = await startApp({ dir, overrides: { quotas: { agents: 0, blocks: 1 } } });
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the file agent loads past agents: 0 and blocks: 1; the tenant itself is refused', async () => {
    const listed = await api(t, 'GET', '/v1/agents/?name=helper');
    expect(listed.body).toHaveLength(1);
    expect(listed.body[0].source).toBe('file');
    expect((await usage(t, 'default')).blocks).toBe(2);
    const agent = await api(t, 'POST', '/v1/agents/', { name: 'mine' });
    expect(agent.body).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'agents' } });
    const b = await api(t, 'POST', '/v1/blocks/', block('more'));
    expect(b.body).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'blocks' } });
  });
});

/** A database of an earlier version gets its counts when it is migrated: what it stores counts at once. */
describe('migration: TenantUsage counts what a tenant stored before it', () => {
  it('down and up again: the counters are the rows', async () => {
    let t = await startApp({ keepDir: true, overrides: TWO_TENANTS });
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      { name: 'old', memory_blocks: [block('human')] },
      TENANT_A,
    );
    await api(t, 'POST', `/v1/agents/${agent.body.id}/archival-memory`, { text: 'x' }, TENANT_A);
    await api(t, 'POST', '/v1/blocks/', block('loose'), TENANT_B);
    const { dir, config } = t;
    await t.close();
    await rerunMigration(config, new TenantUsage1765143000000(), 'tenant_usage');
    t = await startApp({ dir, overrides: TWO_TENANTS });
    try {
      const schema = t.config.database.schema;
      const a = await countsAndRows(t.app.get(DataSource), schema, 'tenant-a');
      expect(a.filter(([, used, rows]) => used !== rows)).toEqual([]);
      expect(a.filter(([, used]) => used > 0).map(([q, used]) => [q, used])).toEqual([
        ['agents', 1],
        ['blocks', 1],
        ['archives', 1],
        ['passages', 1],
      ]);
      expect((await usage(t, 'tenant-b')).blocks).toBe(1);
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
