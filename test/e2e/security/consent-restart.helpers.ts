/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { MessagingService } from '../../../src/processing/messaging.service';
import { ProcessingRepository } from '../../../src/processing/processing.repository';
import { ToolExecutorService } from '../../../src/rules/tool-executor.service';
import type { TestApp } from '../../support/app-harness';
import { api, runEnded, say } from '../../support/processing-fixtures';
import { port } from '../consent-helpers';

/** Where the last process stopped, between a person's approval (stored, answered 200) and the tool. */
export type CrashPoint =
  | 'before the continuation was created'
  | 'continuation running, approval not yet used'
  | 'continuation running, approval used, tool not claimed'
  | 'tool claimed (started)';

export interface Parked {
  agentId: string;
  runId: string;
  requestId: string;
  toolCallId: string;
  /** The step whose turn made the call (a call is its tool_call_id in that step). */
  stepId: string;
  arguments: Record<string, unknown>;
}

/** An agent whose `pay` call (scripted model) needs consent, parked on it. */
export async function parkedAgent(t: TestApp, n: number): Promise<Parked> {
  const agent = await api(t, 'POST', '/v1/agents/', {
    name: `crash-${n}-${Math.random().toString(36).slice(2)}`,
    model: 'scripted/crash',
    tools: ['pay'],
    include_base_tools: false,
    tool_rules: [{ type: 'requires_approval', tool_name: 'pay' }],
    model_script: [
      { tool_calls: [{ name: 'pay', arguments: { q: String(n) } }] },
      { content: 'paid' },
    ],
  });
  const agentId = agent.body.id as string;
  const run = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say('pay'));
  if (run.body.stop_reason?.stop_reason !== 'requires_approval')
    throw new Error(`did not park: ${JSON.stringify(run.body)}`);
  const parked = (await t.app.get(ProcessingRepository).findRunById(run.body.run_id))!.parked![0];
  return {
    agentId,
    runId: run.body.run_id,
    requestId: parked.request_id!,
    toolCallId: parked.tool_call_id,
    stepId: parked.step_id!,
    arguments: parked.arguments,
  };
}

/**
 * Leaves the database as a process killed at `point` would: the person's approval is stored (answered
 * 200), then the steps up to the point, and nothing after. Deterministic, where a real kill is a matter of
 * timing. The app's own continuation is held back while the state is built.
 */
export async function approveThenCrashAt(t: TestApp, p: Parked, point: CrashPoint): Promise<void> {
  const messaging = t.app.get(MessagingService);
  // the parked run's own check for decisions (made as its run ends, after the answer was sent) must be
  // over first: begun before the holds below, it would read this decision and continue the batch itself
  await messaging.mailbox.whenIdle();
  // every way a decision continues its batch: in its own transaction, from memory (parked here) and
  // from the database
  const holds = [
    jest
      .spyOn(
        messaging as unknown as { continueWithDecision: () => Promise<null> },
        'continueWithDecision',
      )
      .mockResolvedValue(null),
    jest.spyOn(messaging, 'resumeIfDecided').mockResolvedValue(undefined),
    jest
      .spyOn(
        messaging as unknown as { resumeAfterDecision: () => Promise<void> },
        'resumeAfterDecision',
      )
      .mockResolvedValue(undefined),
  ];
  try {
    const decided = await api(t, 'POST', `/v1/consent/requests/${p.requestId}/decision`, {
      decision: 'approve_once',
    });
    expect(decided.status).toBe(200);
    if (point === 'before the continuation was created') return;
    const repo = t.app.get(ProcessingRepository);
    const parkedRun = (await repo.findRunById(p.runId))!;
    const now = Date.now();
    const created = await repo.insertContinuation(p.runId, {
      ...parkedRun,
      id: `run-${crypto.randomUUID()}`,
      status: 'running',
      stop_reason: null,
      input: { kind: 'resume', mode: 'async', messages: [], resumes_run_id: p.runId },
      usage: null,
      error: null,
      parked: null,
      continued_by: null,
      created_at: now,
      started_at: now,
      completed_at: null,
    });
    expect(created).toBe(true);
    if (point === 'continuation running, approval not yet used') return;
    // what the executor does first: the consent check uses the approval up
    const check = await port(t).check({
      tenantId: 'default',
      agentId: p.agentId,
      runId: p.runId,
      batchId: parkedRun.batch_id,
      toolCallId: p.toolCallId,
      toolName: 'pay',
      arguments: p.arguments,
      scope: 'pay',
      timeoutMs: 300_000,
    });
    expect(check.kind).toBe('approved');
    if (point === 'continuation running, approval used, tool not claimed') return;
    const store = t.app.get(ToolExecutorService).store;
    expect(await store.claimToolCall(p.agentId, p.toolCallId, p.stepId, now, 'default')).toBe(true);
  } finally {
    for (const h of holds) h.mockRestore();
  }
}

/** The agent's runs once its batch has ended (none queued, running or parked), oldest first. */
export async function settledRuns(t: TestApp, agentId: string): Promise<any[]> {
  for (;;) {
    const runs = (await api(t, 'GET', `/v1/runs/?agent_id=${agentId}&order=asc`)).body as any[];
    const open = runs.filter((r) => r.status === 'created' || r.status === 'running');
    if (open.length) await runEnded(t, open[0].id);
    else if (runs.at(-1)?.stop_reason !== 'requires_approval') return runs;
    else await new Promise((r) => setTimeout(r, 10)); // its continuation is being created
  }
}
