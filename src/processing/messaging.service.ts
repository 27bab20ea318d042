import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { badRequest, conflict, DomainError } from '../common/domain-error';
import { CLOCK } from '../common/clock';
import { ID_GENERATOR } from '../common/ids';
import { RunEventsBus } from '../common/run-events';
import type { Clock, IdGenerator } from '../core/ports';
import type { StopReason } from '../core/loop/stop-reason';
import { AgentProcessor } from './agent-processor.service';
import type { MessageEntity } from './entities/message.entity';
import type { RunEntity, RunInput } from './entities/run.entity';
import { Mailbox } from './mailbox';
import { ProcessingRepository } from './processing.repository';
import {
  AGENT_PORT,
  AgentPort,
  CONSENT_BRIDGE,
  ConsentBridge,
  InBandApproval,
} from './processing.ports';
import type { SendMessageRequest } from './send-message.dto';

export interface BatchResult {
  run: RunEntity;
  /** What the batch produced (the request's own messages left out). */
  messages: MessageEntity[];
}

/**
 * Messaging: stores a request as a run before anything else happens, queues it in the agent's
 * mailbox, and lets callers wait for it. Also consent resumption (idempotent per parked run) and cancellation.
 */
@Injectable()
export class MessagingService implements OnModuleInit {
  private readonly logger = new Logger('Messaging');
  readonly mailbox: Mailbox;
  private readonly waiters = new Map<string, ((r: Settled) => void)[]>();
  /** Runs queued by this process, so processing does not read them back. */
  private readonly queuedRuns = new Map<string, RunEntity>();

  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    private readonly repo: ProcessingRepository,
    private readonly processor: AgentProcessor,
    private readonly bus: RunEventsBus,
    @Inject(AGENT_PORT) private readonly agents: AgentPort,
    @Inject(CONSENT_BRIDGE) private readonly consent: ConsentBridge,
  ) {
    this.mailbox = new Mailbox(async (job) => {
      let result: BatchResult | null = null;
      try {
        result = await this.processor.process(job.runId, this.queuedRuns.get(job.runId));
      } finally {
        this.queuedRuns.delete(job.runId);
        this.settle(job.runId, result);
      }
      // A person may have decided while the run was still parking (the request is pushed as it is made).
      if (result?.run.parked) await this.resumeIfDecided(result.run.tenant_id, result.run.agent_id);
    });
  }

  onModuleInit(): void {
    this.consent.onDecision((e) => {
      this.resumeIfDecided(e.tenantId, e.agentId).catch((err: unknown) =>
        this.logger.error(`resume after a decision for ${e.agentId}: ${String(err)}`),
      );
    });
  }

  // ------------------------------------------------------------ requests

  /** Stores the request as a run (and queues it); approvals continue the parked batch instead. */
  async submit(
    tenantId: string,
    agentId: string,
    req: SendMessageRequest,
    mode: RunInput['mode'],
    /** Runs after the run is stored and before it is queued (a stream subscribes here). */
    beforeQueue?: (run: RunEntity) => void,
  ): Promise<RunEntity> {
    await this.agents.get(tenantId, agentId);
    this.assertOpen();
    const parked = await this.repo.findParkedRun(tenantId, agentId);
    if (req.approvals) {
      return this.approveInBand(tenantId, agentId, parked, req, mode, beforeQueue);
    }
    if (parked) {
      const first = parked.parked![0];
      throw conflict(
        'PENDING_APPROVAL',
        `agent ${agentId} is waiting for approval of ${first.name} (tool_call_id ${first.tool_call_id}); answer it first`,
        { request_id: first.request_id, tool_call_id: first.tool_call_id, run_id: parked.id },
      );
    }
    const run = this.newRun(tenantId, agentId, this.ids.snowflake(), {
      kind: 'message',
      mode,
      messages: req.messages,
      max_steps: req.maxSteps,
      budgets: req.budgets,
      ...(req.streamTokens ? { stream_tokens: true } : {}),
    });
    await this.repo.insertRun(run);
    beforeQueue?.(run);
    this.enqueue(run, false);
    return run;
  }

  /** Resolves when the run has ended (at once when it already has). */
  async waitFor(runId: string): Promise<BatchResult> {
    const pending = new Promise<Settled>((resolve) => {
      const list = this.waiters.get(runId) ?? [];
      list.push(resolve);
      this.waiters.set(runId, list);
    });
    if (!this.queuedRuns.has(runId)) {
      const current = await this.repo.findRunById(runId);
      if (current && isFinal(current.status)) this.settle(runId, null);
    }
    const done = await pending;
    if (done === 'shutdown') {
      throw new DomainError(
        'unavailable',
        'SHUTTING_DOWN',
        `the server is shutting down; run ${runId} stays queued and runs after the restart`,
        { run_id: runId },
      );
    }
    if (done) return done;
    const run = (await this.repo.findRunById(runId))!;
    const messages = await this.repo.runMessages(run.tenant_id, runId);
    return { run, messages: messages.filter((m) => !m.payload._input) };
  }

  /** Cancels the agent's queued and running runs (all, or the given ones); a parked batch has its calls denied. */
  async cancel(
    tenantId: string,
    agentId: string,
    runIds: string[] | null,
  ): Promise<Record<string, string>> {
    await this.agents.get(tenantId, agentId);
    const out = await this.stopRuns(tenantId, agentId, runIds);
    if (Object.keys(out).length === 0) {
      throw conflict('NO_ACTIVE_RUN', `agent ${agentId} has no queued, running or parked run`);
    }
    return out;
  }

  /** Cancels the queued, running and parked runs (all, or the given ones); answers what it cancelled. */
  async stopRuns(
    tenantId: string,
    agentId: string,
    runIds: string[] | null,
  ): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    const wanted = (id: string) => !runIds || runIds.includes(id);
    for (const id of this.mailbox.queued(agentId).filter(wanted)) {
      if (await this.repo.cancelQueuedRun(id, this.clock.now())) {
        this.mailbox.remove(agentId, id);
        this.publishEnd(tenantId, agentId, id, 'cancelled');
        this.queuedRuns.delete(id);
        this.settle(id, null);
        out[id] = 'cancelled';
      }
    }
    for (const id of this.processor.activeRunIds(agentId).filter(wanted)) {
      if (this.processor.abort(id, 'cancelled')) out[id] = 'cancelled';
    }
    const parked = await this.repo.findParkedRun(tenantId, agentId);
    if (parked && wanted(parked.id)) {
      const calls = parked.parked ?? [];
      await this.consent.denyPending(
        tenantId,
        agentId,
        calls.map((c) => c.tool_call_id),
        'cancelled',
      );
      const cont = await this.resume(parked, { cancel: true });
      if (cont) out[parked.id] = 'cancelled';
    }
    return out;
  }

  // ------------------------------------------------------------ consent

  private async approveInBand(
    tenantId: string,
    agentId: string,
    parked: RunEntity | null,
    req: SendMessageRequest,
    mode: RunInput['mode'],
    beforeQueue?: (run: RunEntity) => void,
  ): Promise<RunEntity> {
    const calls = parked?.parked ?? [];
    if (!parked || calls.length === 0) {
      throw badRequest('NO_PENDING_APPROVAL', `agent ${agentId} has no pending approval request`);
    }
    let approvals: InBandApproval[] = req.approvals!;
    if (req.approvalRequestId !== null || approvals[0].tool_call_id === '') {
      // legacy form: one decision for the (single) pending request
      const match = calls.find(
        (c) =>
          req.approvalRequestId === null ||
          c.request_id === req.approvalRequestId ||
          c.tool_call_id === req.approvalRequestId,
      );
      if (!match || calls.length !== 1) {
        throw badRequest(
          'APPROVAL_MISMATCH',
          `approval_request_id does not match the pending request`,
          {
            pending: calls.map((c) => ({ request_id: c.request_id, tool_call_id: c.tool_call_id })),
          },
        );
      }
      approvals = [{ ...approvals[0], tool_call_id: match.tool_call_id }];
    }
    const pendingIds = new Set(calls.map((c) => c.tool_call_id));
    const given = new Set(approvals.map((a) => a.tool_call_id));
    if (
      given.size !== approvals.length ||
      given.size !== pendingIds.size ||
      [...given].some((id) => !pendingIds.has(id))
    ) {
      throw badRequest(
        'APPROVAL_MISMATCH',
        `the approvals must answer exactly the pending tool calls: ${[...pendingIds].join(', ')}`,
        { pending_tool_call_ids: [...pendingIds] },
      );
    }
    // the continuation is stored (and claims the parked run) before the decisions, so that the
    // broker's decision listener finds it claimed; it is queued once every decision is recorded
    const cont = this.newRun(tenantId, agentId, parked.batch_id, {
      kind: 'resume',
      mode,
      messages: req.messages,
      max_steps: req.maxSteps,
      budgets: req.budgets,
      ...(req.streamTokens ? { stream_tokens: true } : {}),
      resumes_run_id: parked.id,
      approvals: approvals.map((a) => ({
        tool_call_id: a.tool_call_id,
        approve: a.approve,
        reason: a.reason ?? null,
      })),
    });
    if (!(await this.repo.insertContinuation(parked.id, cont))) {
      throw conflict('ALREADY_RESOLVED', 'the pending request was already answered');
    }
    try {
      for (const a of approvals) await this.consent.decide(tenantId, agentId, a);
    } catch (e) {
      // a decision that could not be recorded (already resolved elsewhere): the batch still continues
      if (!(e instanceof DomainError)) throw e;
      this.logger.warn(`in-band decision: ${e.message}`);
    }
    beforeQueue?.(cont);
    this.enqueue(cont, true);
    return cont;
  }

  /**
   * Continues the agent's parked batch once every parked call has a stored decision. Asked after each
   * decision, after a run parks, and at boot, and answered from the database alone, so a decision that
   * lands while its run is still parking, or just before a crash, is never lost.
   */
  async resumeIfDecided(tenantId: string, agentId: string): Promise<void> {
    const parked = await this.repo.findParkedRun(tenantId, agentId);
    if (!parked?.parked?.length) return;
    const ids = parked.parked.map((c) => c.tool_call_id);
    if ((await this.consent.undecided(tenantId, agentId, ids)).length === 0) {
      await this.resume(parked, {});
    }
  }

  /**
   * Continues a parked batch in a new run; idempotent: the first caller creates the continuation,
   * later ones get the same run id.
   */
  async resume(parked: RunEntity, opts: { cancel?: boolean }): Promise<string | null> {
    const cont = this.newRun(parked.tenant_id, parked.agent_id, parked.batch_id, {
      kind: 'resume',
      mode: 'async',
      messages: [],
      resumes_run_id: parked.id,
      ...(opts.cancel ? { cancel: true } : {}),
    });
    if (await this.repo.insertContinuation(parked.id, cont)) {
      this.enqueue(cont, true);
      return cont.id;
    }
    return (await this.repo.findRunById(parked.id))?.continued_by ?? null;
  }

  // ------------------------------------------------------------ internals

  enqueue(run: RunEntity, priority: boolean): void {
    this.queuedRuns.set(run.id, run);
    if (!this.mailbox.enqueue(run.agent_id, { runId: run.id, priority })) {
      this.queuedRuns.delete(run.id);
      this.logger.warn(`run ${run.id} stays queued: shutting down`);
    }
  }

  private assertOpen(): void {
    if (this.mailbox.isClosed) {
      throw new DomainError('unavailable', 'SHUTTING_DOWN', 'the server is shutting down');
    }
  }

  private newRun(tenantId: string, agentId: string, batchId: string, input: RunInput): RunEntity {
    return {
      id: this.ids.prefixed('run'),
      tenant_id: tenantId,
      agent_id: agentId,
      status: 'created',
      stop_reason: null,
      batch_id: batchId,
      input,
      usage: null,
      error: null,
      parked: null,
      continued_by: null,
      created_at: this.clock.now(),
      started_at: null,
      completed_at: null,
    };
  }

  /** Shutdown: callers waiting on runs that will not start now get 503 (the runs stay queued). */
  releaseQueuedWaiters(): void {
    for (const runId of [...this.waiters.keys()]) {
      if (!this.processor.isActive(runId)) this.settle(runId, 'shutdown');
    }
    for (const run of this.queuedRuns.values()) {
      if (this.processor.isActive(run.id)) continue;
      // open streams of queued runs end with an error frame instead of hanging the shutdown
      this.bus.publish({
        tenantId: run.tenant_id,
        agentId: run.agent_id,
        runId: run.id,
        type: 'run.deferred',
        data: { reason: 'shutting down; the run stays queued' },
      });
    }
  }

  private settle(runId: string, result: Settled): void {
    const list = this.waiters.get(runId);
    this.waiters.delete(runId);
    list?.forEach((r) => r(result));
  }

  private publishEnd(tenantId: string, agentId: string, runId: string, stop: StopReason): void {
    this.bus.publish({
      tenantId,
      agentId,
      runId,
      type: 'run.completed',
      data: { status: 'cancelled', stop_reason: stop, usage: null },
    });
  }
}

/** How a wait ends: the result in memory, null (read it back), or the server going down. */
type Settled = BatchResult | null | 'shutdown';

const isFinal = (s: RunEntity['status']) =>
  s === 'completed' || s === 'failed' || s === 'cancelled';
