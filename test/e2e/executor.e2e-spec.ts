import { rmSync } from 'node:fs';
import { AGENT_LEASES, type AgentLeases } from '../../src/cluster/agent-leases';
import type { ToolInvoker } from '../../src/core/executor/contracts';
import { ToolExecutor } from '../../src/core/executor/tool-executor';
import type { ToolRule } from '../../src/core/rules/tool-rule';
import { ToolExecutorService } from '../../src/rules/tool-executor.service';
import { startApp, TestApp } from '../support/app-harness';
import { aSetup, aTool, code, DEFAULT_SETTINGS } from '../unit/core/executor/executor-harness';

/** The database-backed state store: persistent and per-batch state survive a restart of the server. */
describe('ToolExecutorService (real database)', () => {
  const rules: ToolRule[] = [
    { type: 'cooldown', tool_name: 'ping', seconds: 3600 },
    { type: 'max_count_per_step', tool_name: 'status', max_count_limit: 1 },
  ];
  const setup = aSetup(rules, [aTool('deploy', 'side_effecting'), aTool('ping'), aTool('status')]);
  const invoker: ToolInvoker = {
    invoke: (tool) => Promise.resolve({ status: 'success', value: `${tool.name} done` }),
  };
  const meta = { tenantId: 'default', agentId: setup.agentId, runId: 'run-1', batchId: 'b1' };
  let t: TestApp | undefined;

  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  /** The executor of the app, for an agent whose lease the app holds (only the holder executes its calls). */
  async function executorOn(app: TestApp, tools = invoker): Promise<ToolExecutor> {
    await app.app.get<AgentLeases>(AGENT_LEASES).acquire('default', setup.agentId);
    const svc = app.app.get(ToolExecutorService);
    return new ToolExecutor({
      clock: { now: () => Date.now() },
      store: svc.store,
      invoker: tools,
      consent: { check: () => Promise.resolve({ kind: 'granted', grantId: 'g' }) },
      limits: { batchTtlMs: 86_400_000 },
    });
  }

  it('keeps dedupe, cooldowns, batch counters and tool-call claims across a restart', async () => {
    t = await startApp({ keepDir: true });
    const dir = t.dir;
    try {
      let ex = await executorOn(t);
      let pass = ex.newPass(setup, 'b1');
      const first = [
        await ex.execute(
          setup,
          pass,
          { toolCallId: 'c1', name: 'deploy', arguments: { v: 1 } },
          meta,
        ),
        await ex.execute(setup, pass, { toolCallId: 'c2', name: 'ping', arguments: {} }, meta),
        await ex.execute(setup, pass, { toolCallId: 'c3', name: 'status', arguments: {} }, meta),
      ];
      expect(first.map(code)).toEqual(['ok', 'ok', 'ok']);
      await t.close();

      t = await startApp({ dir });
      ex = await executorOn(t);
      pass = ex.newPass(setup, 'b1'); // the same batch resumes after the restart
      const again = [
        await ex.execute(
          setup,
          pass,
          { toolCallId: 'c4', name: 'deploy', arguments: { v: 1 } },
          meta,
        ),
        await ex.execute(setup, pass, { toolCallId: 'c5', name: 'ping', arguments: {} }, meta),
        await ex.execute(setup, pass, { toolCallId: 'c6', name: 'status', arguments: {} }, meta),
        await ex.execute(
          setup,
          pass,
          { toolCallId: 'c3', name: 'deploy', arguments: { v: 2 } },
          meta,
        ),
      ];
      expect(again.map(code)).toEqual([
        'Deduplicated',
        'RuleViolation',
        'RuleViolation',
        'AlreadyExecuted',
      ]);

      // A new batch resets the batch counters and keeps the cooldown.
      await ex.completeBatch('b1');
      pass = ex.newPass(setup, 'b2');
      const next = [
        await ex.execute(setup, pass, { toolCallId: 'c7', name: 'status', arguments: {} }, meta),
        await ex.execute(setup, pass, { toolCallId: 'c8', name: 'ping', arguments: {} }, meta),
      ];
      expect(next.map(code)).toEqual(['ok', 'RuleViolation']);
      await ex.pruneExpired();
    } finally {
      await t?.close();
      t = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('dedupes a call whose entry is larger than the cache holds (tool_executor.cache_max_bytes): from the database', async () => {
    t = await startApp({ overrides: { tool_executor: { cache_max_bytes: 4096 } } });
    const big = 'r'.repeat(20_000);
    const run = await executorOn(t, {
      invoke: () => Promise.resolve({ status: 'success', value: big }),
    });
    const store = t.app.get(ToolExecutorService).store as unknown as { dedupe: { size: number } };
    const pass = run.newPass(setup, 'b9');
    const call = (id: string) => ({ toolCallId: id, name: 'deploy', arguments: { v: 9 } });
    expect(code(await run.execute(setup, pass, call('c90'), { ...meta, batchId: 'b9' }))).toBe(
      'ok',
    );
    expect(store.dedupe.size).toBe(0);
    expect(code(await run.execute(setup, pass, call('c91'), { ...meta, batchId: 'b9' }))).toBe(
      'Deduplicated',
    );
  });

  it('claims a call per (step, tool_call_id), across a restart; a claim stored without a step counts in any step', async () => {
    t = await startApp({ keepDir: true });
    const dir = t.dir;
    try {
      await executorOn(t); // only the agent's holder claims its calls
      const store = () => t!.app.get(ToolExecutorService).store;
      const now = Date.now();
      const claim = (id: string, step: string) =>
        store().claimToolCall(setup.agentId, id, step, now, 'default');
      expect(await claim('call_0', 'step-1')).toBe(true);
      expect(await claim('call_0', 'step-2')).toBe(true); // the provider reused the id
      expect(await claim('call_0', 'step-1')).toBe(false);
      expect(await claim('call_legacy', '')).toBe(true); // as claims were stored before steps
      await t.close();

      t = await startApp({ dir });
      await executorOn(t);
      expect(await claim('call_0', 'step-2')).toBe(false);
      expect(await claim('call_0', 'step-3')).toBe(true);
      expect(await store().isClaimed(setup.agentId, 'call_0', 'step-1')).toBe(true);
      expect(await store().isClaimed(setup.agentId, 'call_0', 'step-4')).toBe(false);
      expect(await store().isClaimed(setup.agentId, 'call_legacy', 'step-9')).toBe(true);
    } finally {
      await t?.close();
      t = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps a parked batch past the TTL; once it goes on, the TTL applies again', async () => {
    t = await startApp();
    const store = t.app.get(ToolExecutorService).store;
    const day = 86_400_000;
    const state = (at: number) => ({ callCounts: { status: 1 }, createdAt: at, updatedAt: at });
    await store.saveBatch('b-parked', state(0), 'default');
    await store.saveBatch('b-left', state(0), 'default');
    await store.parkBatch('b-parked');
    await store.pruneExpired(2 * day, day);
    expect(await store.loadBatch('b-parked')).toMatchObject({ callCounts: { status: 1 } });
    expect(await store.loadBatch('b-left')).toBeNull();
    await store.saveBatch('b-parked', state(2 * day), 'default'); // the batch went on
    await store.pruneExpired(3 * day, day);
    expect(await store.loadBatch('b-parked')).toBeNull();
  });

  it('merges config defaults with the agent field into settings', async () => {
    t = await startApp({ overrides: { tool_executor: { tool_timeout_seconds: 7 } } });
    const svc = t.app.get(ToolExecutorService);
    expect(svc.settingsFor(undefined)).toEqual({ ...DEFAULT_SETTINGS, toolTimeoutMs: 7000 });
    expect(svc.settingsFor({ dedupe_window_seconds: 0, consent_timeout_seconds: 5 })).toEqual({
      toolTimeoutMs: 7000,
      consentTimeoutMs: 5000,
      dedupeWindowMs: 0,
    });
  });
});
