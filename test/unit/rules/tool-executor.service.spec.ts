import type { DataSource } from 'typeorm';
import { loadConfig } from '../../../src/config/app-config';
import { LocalAgentLeases } from '../../../src/cluster/agent-leases';
import type { GroupCommit } from '../../../src/database/group-commit';
import { settingsFor, ToolExecutorService } from '../../../src/rules/tool-executor.service';
import { aSetup, aTool, code, FakeClock } from '../core/executor/executor-harness';

/** A database that holds nothing: enough for the store's write-through and misses. */
const em = {
  upsert: () => Promise.resolve(),
  insert: () => Promise.resolve(),
  delete: () => Promise.resolve(),
  existsBy: () => Promise.resolve(false),
};
const ds = {
  getRepository: () => ({
    findOneBy: () => Promise.resolve(null),
    existsBy: () => Promise.resolve(false),
  }),
  // the raw reads (src/database/raw-reads.ts)
  driver: { options: { type: 'better-sqlite3' }, escape: (n: string) => n },
  getMetadata: () => ({ columns: [], tableName: 't' }),
  query: () => Promise.resolve([]),
} as unknown as DataSource;
const tx = {
  run: (work: (e: typeof em) => Promise<unknown>) => work(em),
  insert: () => Promise.resolve(),
} as unknown as GroupCommit;
const ids = { prefixed: (p: string) => `${p}-1`, snowflake: () => '1' };
const leases = new LocalAgentLeases(ds);

describe('ToolExecutorService', () => {
  const config = loadConfig({});

  test.each<[string, Parameters<typeof settingsFor>[1], [number, number, number]]>([
    ['no agent field: config defaults', undefined, [120_000, 300_000, 300_000]],
    ['null field', null, [120_000, 300_000, 300_000]],
    ['partial override', { tool_timeout_seconds: 5 }, [5_000, 300_000, 300_000]],
    [
      'dedupe window 0 turns default dedupe off',
      { dedupe_window_seconds: 0 },
      [120_000, 300_000, 0],
    ],
    [
      'all overridden',
      { tool_timeout_seconds: 1, consent_timeout_seconds: 2, dedupe_window_seconds: 3 },
      [1_000, 2_000, 3_000],
    ],
  ])('settingsFor: %s', (_s, field, [t, c, d]) => {
    expect(settingsFor(config.tool_executor, field)).toEqual({
      toolTimeoutMs: t,
      consentTimeoutMs: c,
      dedupeWindowMs: d,
    });
  });

  it('fails closed without ports: no invoker → error return, no broker → denied', async () => {
    const svc = new ToolExecutorService(config, new FakeClock(), ids, ds, tx, leases);
    const setup = aSetup([{ type: 'requires_consent', tool_name: 'b' }], [aTool('a'), aTool('b')]);
    const pass = svc.executor.newPass(setup, 'batch');
    const meta = { tenantId: 'default', agentId: setup.agentId, runId: 'r', batchId: 'batch' };
    const a = await svc.executor.execute(
      setup,
      pass,
      { toolCallId: 'c1', name: 'a', arguments: {} },
      meta,
    );
    expect([code(a), a.returnValue]).toEqual(['err', 'no tool implementation']);
    const b = await svc.executor.execute(
      setup,
      pass,
      { toolCallId: 'c2', name: 'b', arguments: {} },
      meta,
    );
    expect(b.returnValue).toMatch(
      /^\[ToolPermissionDenied\] b was denied: no consent broker configured/,
    );
  });

  it('prunes on an unref’d timer and stops it on shutdown', () => {
    const svc = new ToolExecutorService(config, new FakeClock(), ids, ds, tx, leases);
    svc.onModuleInit();
    const timer = (svc as unknown as { timer: NodeJS.Timeout }).timer;
    expect(timer.hasRef()).toBe(false);
    svc.onModuleDestroy();
    expect((svc as unknown as { timer?: NodeJS.Timeout }).timer).toBeUndefined();
  });
});
