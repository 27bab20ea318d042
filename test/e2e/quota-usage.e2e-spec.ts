/* eslint-disable @typescript-eslint/no-explicit-any */
import { startApp, TestApp } from '../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../support/fake-model-server';
import {
  api,
  createAgent,
  say,
  TENANT_A,
  TENANT_B,
  TWO_TENANTS,
} from '../support/processing-fixtures';

async function until(cond: () => Promise<boolean>): Promise<void> {
  while (!(await cond())) await new Promise((r) => setTimeout(r, 10));
}

/**
 * `GET /v1/quotas`: a tenant reads what it uses of each quota and its bound (a tenant could learn it only
 * from a 409 QUOTA_EXCEEDED). Only its own: the answer depends on nothing but the caller's key.
 */
describe('GET /v1/quotas: the calling tenant’s usage and limits', () => {
  let t: TestApp;
  let fake: FakeModelServer;
  let release: (() => void) | null = null;

  beforeAll(async () => {
    fake = await startFakeModelServer();
    t = await startApp({
      modelBaseUrl: fake.baseUrl,
      overrides: {
        ...TWO_TENANTS,
        quotas: { agents: 5, running_runs: 3, tenants: { 'tenant-b': { agents: 2 } } },
      },
    });
  });
  afterAll(async () => {
    release?.();
    await t?.close();
    await fake?.close();
  });

  const quotas = async (headers: Record<string, string>) => {
    const res = await api(t, 'GET', '/v1/quotas', undefined, headers);
    expect(res.status).toBe(200);
    return Object.fromEntries(
      (res.body.quotas as any[]).map((q) => [q.quota, [q.used, q.limit, q.setting, q.scope]]),
    );
  };

  it('create things, read usage; a run holds a slot while it runs; delete, read again; B sees only its own', async () => {
    const fresh = await quotas(TENANT_A);
    expect(fresh).toMatchObject({
      agents: [0, 5, 'quotas.agents', 'tenant'],
      blocks: [0, 100000, 'quotas.blocks', 'tenant'],
      secrets: [0, 100, 'quotas.secrets', 'tenant'],
      running_runs: [0, 3, 'quotas.running_runs', 'instance'],
    });
    expect(Object.keys(fresh)).toHaveLength(12);

    const agent = await createAgent(
      t,
      fake,
      {
        system: 'the held agent',
        memory_blocks: [
          { label: 'human', value: 'Ada' },
          { label: 'persona', value: 'helper' },
        ],
      },
      TENANT_A,
    );
    expect(
      (await api(t, 'POST', '/v1/blocks/', { label: 'notes', value: 'n' }, TENANT_A)).status,
    ).toBe(200);
    expect((await api(t, 'PUT', '/v1/secrets/TOKEN', { value: 'shh' }, TENANT_A)).status).toBe(200);
    expect(await quotas(TENANT_A)).toMatchObject({
      agents: [1, 5, 'quotas.agents', 'tenant'],
      blocks: [3, 100000, 'quotas.blocks', 'tenant'],
      secrets: [1, 100, 'quotas.secrets', 'tenant'],
    });

    // B's answer holds nothing of A's, and B's own number where the operator gave one
    const b = await api(t, 'GET', '/v1/quotas', undefined, TENANT_B);
    expect(JSON.stringify(b.body)).not.toContain('tenant-a');
    expect(await quotas(TENANT_B)).toMatchObject({
      agents: [0, 2, 'quotas.tenants.tenant-b.agents', 'tenant'],
      blocks: [0, 100000, 'quotas.blocks', 'tenant'],
      secrets: [0, 100, 'quotas.secrets', 'tenant'],
      running_runs: [0, 3, 'quotas.running_runs', 'instance'],
    });

    // a run of A's processing here holds one of its slots until it ends
    fake.respond(async () => {
      await new Promise<void>((go) => (release = go));
      return { content: 'done' };
    });
    const run = await api(t, 'POST', `/v1/agents/${agent}/messages/async`, say('hi'), TENANT_A);
    expect(run.status).toBe(202);
    await fake.waitForRequests(1);
    expect((await quotas(TENANT_A)).running_runs).toEqual([
      1,
      3,
      'quotas.running_runs',
      'instance',
    ]);
    expect((await quotas(TENANT_B)).running_runs[0]).toBe(0);
    release!();
    await until(async () => (await quotas(TENANT_A)).running_runs[0] === 0);

    // deleting the agent takes it and its own blocks away; the standalone block stays
    expect((await api(t, 'DELETE', `/v1/agents/${agent}`, undefined, TENANT_A)).status).toBe(200);
    expect(await quotas(TENANT_A)).toMatchObject({
      agents: [0, 5, 'quotas.agents', 'tenant'],
      blocks: [1, 100000, 'quotas.blocks', 'tenant'],
      secrets: [1, 100, 'quotas.secrets', 'tenant'],
    });
  });

  it('without a valid key: 401, nobody’s usage', async () => {
    const res = await api(t, 'GET', '/v1/quotas', undefined, { authorization: 'Bearer nope' });
    expect([res.status, res.body.code]).toEqual([401, 'UNAUTHORIZED']);
  });
});
