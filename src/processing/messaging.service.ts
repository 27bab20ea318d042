import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { filter } from 'rxjs';
import type { EntityManager } from 'typeorm';
import { AGENT_LEASES, type AgentLeases } from '../cluster/agent-leases';
import { EVENT_BUS, type EventBus } from '../cluster/event-bus';
import { badRequest, conflict, DomainError, validationFailed } from '../common/domain-error';
import { isUniqueViolation } from '../database/unique-violation';
import { CLOCK } from '../common/clock';
import { ID_GENERATOR } from '../common/ids';
import { RunEventsBus } from '../common/run-events';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { quotaFor } from '../core/limits/quotas';
import { hasImages } from '../core/loop/content-parts';
import { stepCallKey } from '../core/loop/tool-call-ids';
import type { Clock, IdGenerator } from '../core/ports';
import type { StopReason } from '../core/loop/stop-reason';
import { AgentProcessor, RunNotStored } from './agent-processor.service';
import { type LettaView, mapMessage, MappedMessage } from './message.mapper';
import {
  awaitingAnswer,
  type ClientToolSpec,
  type ParkedCall,
  type RunEntity,
  type RunInput,
} from './entities/run.entity';
import { Mailbox } from './mailbox';
import { ProcessingRepository } from './processing.repository';
import {
  AGENT_PORT,
  AgentPort,
  CONSENT_BRIDGE,
  ConsentBridge,
  ConsentDecisionEvent,
  DecidedCall,
  EXECUTOR_PORT,
  ExecutorPort,
  InBandApproval,
  MODELS_PORT,
  ModelsPort,
} from './processing.ports';
import { RunCallbacks } from './run-callbacks';
import { RunRecovery } from './run-recovery';
import type { SendMessageRequest } from './send-message.dto';

export interface BatchResult {
  run: RunEntity;
  /** What the batch produced (the request's own messages left out). */
  messages: MappedMessage[];
}

/**
 * Messaging: stores a request as a run before anything else happens, queues it in the agent's
 * mailbox, and lets callers wait for it. Also consent resumption (idempotent per parked run) and cancellation.
 *
 * Several instances: only the holder of an agent's lease (AgentLeases) queues and processes its runs. A
 * run stored here for an agent another instance holds is announced on the event bus (`agent.wake`) and
 * waited for through the run events; an agent whose lease is free is taken, and when it was not held
 * here just before, its caches are dropped and its unfinished runs recovered first (adopt).
 */
@Injectable()
export class MessagingService implements OnModuleInit {
  private readonly logger = new Logger('Messaging');
  readonly mailbox: Mailbox;
  private readonly waiters = new Map<string, ((r: Settled) => void)[]>();
  /** Per agent, the messages being stored here: counted against the queue's bound before they are. */
  private readonly admitting = new Map<string, number>();
  /**
   * Runs queued by this process. The next one of an agent is kept as stored, so processing does not read
   * it back; those queued behind it are kept by their ids only and read when their turn comes: a run holds
   * its request (up to `server.body_limit_bytes`), and an agent busy with a slow tool could otherwise
   * gather `processing.max_queued_runs` of them in memory, for each of a tenant's agents.
   */
  private readonly queuedRuns = new Map<
    string,
    RunEntity | Pick<RunEntity, 'id' | 'tenant_id' | 'agent_id'>
  >();
  /**
   * Agents with message runs held back here: accepted before the batch ahead of them parked, they wait
   * (`created`, in the database only) until that batch ends, then are read and queued again in their
   * order, by whichever instance holds the agent then.
   */
  private readonly holding = new Set<string>();
  /** Lease work per agent, one step at a time (taking, adopting, syncing the queue). */
  private readonly agentWork = new Map<string, Promise<boolean>>();
  private keeper: NodeJS.Timeout | null = null;
  private keeping: Promise<void> | null = null;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    private readonly repo: ProcessingRepository,
    private readonly processor: AgentProcessor,
    private readonly bus: RunEventsBus,
    private readonly recovery: RunRecovery,
    @Inject(AGENT_PORT) private readonly agents: AgentPort,
    @Inject(MODELS_PORT) private readonly models: ModelsPort,
    @Inject(CONSENT_BRIDGE) private readonly consent: ConsentBridge,
    @Inject(EXECUTOR_PORT) private readonly exec: ExecutorPort,
    @Inject(AGENT_LEASES) private readonly leases: AgentLeases,
    @Inject(EVENT_BUS) private readonly events: EventBus,
    private readonly callbacks: RunCallbacks,
  ) {
    this.mailbox = new Mailbox(
      async (job) => {
        const kept = this.queuedRuns.get(job.runId);
        const run = kept && 'input' in kept ? kept : await this.repo.findRunById(job.runId);
        if (!run) {
          this.queuedRuns.delete(job.runId);
          return this.settle(job.runId, null);
        }
        if (
          run.input.kind === 'message' &&
          (this.repo.parkedHere(run.agent_id) ||
            (await this.repo.findParkedRun(run.tenant_id, run.agent_id)))
        ) {
          // one batch at a time; its callers are settled when it runs, here or where the agent goes
          this.queuedRuns.delete(job.runId);
          this.holding.add(run.agent_id);
          return;
        }
        let result: BatchResult | null = null;
        try {
          result = await this.processor.process(run);
        } catch (e) {
          this.queuedRuns.delete(job.runId);
          const notStored = e instanceof RunNotStored;
          if (!isLeaseLost(e) && !notStored) {
            this.settle(job.runId, null);
            throw e;
          }
          // this instance lost the agent, or the run's writes failed: the run stays queued, or `running`
          // if it had started, for whichever instance takes the agent next (this one too: its lease may
          // just have lapsed; after failed writes it takes the agent again at once, and until that
          // recovery passes, at the next message or the keeper's next sweep), which queues the one and
          // recovers the other before any other run of the agent starts; its callers are settled when
          // it ends there
          if (notStored) {
            this.logger.error(e.message);
            this.leases.forget(run.agent_id);
          }
          if (!this.leases.holds(run.agent_id))
            this.dropAgent(
              run.agent_id,
              notStored ? 'its run could not be stored' : 'a write was refused',
            );
          void this.serially(run.agent_id, () => this.take(run.tenant_id, run.agent_id));
          return;
        }
        this.queuedRuns.delete(job.runId);
        this.settle(job.runId, result);
        // A person may have decided while the run was still parking (the request is pushed as it is made).
        if (result?.run.parked)
          await this.resumeIfDecided(result.run.tenant_id, result.run.agent_id);
        else if (this.holding.delete(run.agent_id)) await this.syncQueue(run.agent_id);
      },
      (tenantId) => quotaFor(this.config.quotas, tenantId, 'running_runs'),
    );
  }

  onModuleInit(): void {
    this.consent.onDecision({
      inTransaction: (e, em) => this.continueWithDecision(e, em),
      after: (e, continuation) => {
        if (continuation) {
          this.repo.parkedHere(e.agentId)?.undecided.delete(e.requestId);
          this.enqueue(continuation, true);
          return;
        }
        this.resumeAfterDecision(e.tenantId, e.agentId, e.requestId).catch((err: unknown) =>
          this.logger.error(`resume after a decision for ${e.agentId}: ${String(err)}`),
        );
      },
    });
    this.events.subscribe('agent.wake', ({ agentId }) => {
      if (this.leases.holds(agentId)) void this.serially(agentId, () => this.syncQueue(agentId));
    });
    this.events.subscribe('run.cancel', ({ runIds }) => {
      for (const id of runIds) this.processor.abort(id, 'cancelled');
    });
    // a run processed by another instance ends: its callers waiting here get the stored result
    this.bus.events$
      .pipe(filter((e) => e.type === 'run.completed' && this.waiters.has(e.runId)))
      .subscribe((e) => {
        if (!this.queuedRuns.has(e.runId)) this.settle(e.runId, null);
      });
  }

  // ------------------------------------------------------------ requests

  /**
   * Letta's `override_model`: the handle's llm_config, for the run's input (nothing when not given); a
   * handle no configured provider serves is a 400 before anything is stored.
   */
  private modelFor(req: SendMessageRequest): Pick<RunInput, 'override_model'> {
    if (req.overrideModel === null) return {};
    const r = this.models.fromHandle(req.overrideModel);
    if ('error' in r) throw validationFailed([{ path: 'override_model', message: r.error }]);
    return { override_model: r.ok };
  }

  /** Stores the request as a run (and queues it); approvals continue the parked batch instead. */
  async submit(
    tenantId: string,
    agentId: string,
    req: SendMessageRequest,
    mode: RunInput['mode'],
    /** Runs after the run is stored and before it is queued (a stream subscribes here). */
    beforeQueue?: (run: RunEntity) => void,
  ): Promise<RunEntity> {
    const agent = await this.agents.get(tenantId, agentId);
    const shadowed = req.clientTools.filter((t) => agent.tools.includes(t.name));
    if (shadowed.length) {
      throw badRequest(
        'CLIENT_TOOL_CONFLICT',
        `client_tools may not redeclare the agent's own tools: ${shadowed.map((t) => t.name).join(', ')}`,
        { tools: shadowed.map((t) => t.name) },
      );
    }
    const model = this.modelFor(req);
    const images = req.messages.findIndex((m) => hasImages(m.content));
    if (images >= 0 && !this.models.acceptsImages(model.override_model ?? agent.llm_config))
      throw badRequest(
        'IMAGES_NOT_SUPPORTED',
        `the agent's model ${agent.model} does not accept images (models.*.vision_models lists the ones that do)`,
        { path: `messages[${images}].content`, model: agent.model },
      );
    this.assertOpen();
    // the same request sent again (a retry after a lost answer): its run, not a second one
    const key = req.approvals ? null : requestKey(req);
    const same = key && (await this.repo.findRunByRequestKey(tenantId, agentId, key));
    if (same) return same;
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
    const admitted = await this.admitToQueue(agentId);
    try {
      const run = this.newRun(tenantId, agentId, req.conversationId, this.ids.snowflake(), {
        kind: 'message',
        mode,
        messages: req.messages,
        max_steps: req.maxSteps,
        budgets: req.budgets,
        ...(req.streamTokens ? { stream_tokens: true } : {}),
        ...(req.background ? { background: true } : {}),
        ...(req.clientTools.length ? { client_tools: req.clientTools } : {}),
        ...(req.callbackUrl ? { callback_url: req.callbackUrl } : {}),
        ...viewInput(req.view),
        ...model,
      });
      if (key) run.request_key = key;
      try {
        await this.repo.insertRun(run, true); // a new message: within quotas.stored_bytes
      } catch (e) {
        // a copy of it stored at the same moment (at another instance, say): that one is the run
        const first =
          key && isUniqueViolation(e)
            ? await this.repo.findRunByRequestKey(tenantId, agentId, key)
            : null;
        if (first) return first;
        throw e;
      }
      beforeQueue?.(run);
      this.enqueue(run, false);
      return run;
    } finally {
      admitted();
    }
  }

  /**
   * 429 RUN_QUEUE_FULL once the agent has `processing.max_queued_runs` messages waiting for their turn:
   * counted in memory where this instance processes the agent, else in the database, plus the ones this
   * instance is storing. Answers the release of the place taken, once the run is stored and queued.
   * (Sends to several instances at once may pass the bound by the few each is storing.)
   */
  private async admitToQueue(agentId: string): Promise<() => void> {
    const max = this.config.processing.max_queued_runs;
    const stored = this.leases.holds(agentId)
      ? this.mailbox.waiting(agentId)
      : await this.repo.countQueuedRuns(agentId);
    // with the runs this instance is storing: concurrent sends are each counted before any is stored
    const queued = stored + (this.admitting.get(agentId) ?? 0);
    if (queued >= max)
      throw new DomainError(
        'too_many_requests',
        'RUN_QUEUE_FULL',
        `agent ${agentId} has ${queued} messages waiting for their turn (processing.max_queued_runs is ${max}); send again once one has started`,
        { max_queued_runs: max, queued },
      );
    this.admitting.set(agentId, (this.admitting.get(agentId) ?? 0) + 1);
    return () => {
      const n = this.admitting.get(agentId)! - 1;
      if (n > 0) this.admitting.set(agentId, n);
      else this.admitting.delete(agentId);
    };
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
      // the run is stored: sending again would add the message twice
      throw new DomainError(
        'unavailable',
        'SHUTTING_DOWN',
        `the server is shutting down; run ${runId} stays queued and runs after the restart (do not send it again: GET /v1/runs/${runId} tells when it has run)`,
        { run_id: runId },
        false,
      );
    }
    if (done) return done;
    const run = (await this.repo.findRunById(runId))!;
    const messages = await this.repo.runMessages(run.tenant_id, runId);
    return { run, messages: messages.filter((m) => !m.payload._input).map(mapMessage) };
  }

  /**
   * Cancels the agent's queued and running runs (all, or the given ones); a parked batch has its calls
   * denied. With nothing to cancel the answer is `{}` (a client cancels on an interrupt that may come
   * just after the run ended). A run named in `runIds` is answered as Letta's server does: `cancelled`
   * also when it had already ended (cancelling is idempotent), `failed` when the agent has no such run.
   */
  async cancel(
    tenantId: string,
    agentId: string,
    runIds: string[] | null,
  ): Promise<Record<string, string>> {
    await this.agents.get(tenantId, agentId);
    const stopped = await this.stopRuns(tenantId, agentId, runIds, 'cancel');
    const rest = [...new Set(runIds ?? [])].filter((id) => !Object.hasOwn(stopped, id));
    const known = await this.repo.runIdsOfAgent(tenantId, agentId, rest);
    // own keys whatever the id (assigning `__proto__` would set the prototype, leaving it out)
    return Object.fromEntries([
      ...Object.entries(stopped),
      ...rest.map((id): [string, string] => [id, known.has(id) ? 'cancelled' : 'failed']),
    ]);
  }

  /**
   * Cancels the queued, running and parked runs (all, or the given ones); answers what it cancelled.
   * A person's cancel races the decisions on a parked batch and exactly one wins: a decision that came
   * first (stored, or its continuation still running the decided calls) makes the cancel a 409
   * ALREADY_RESOLVED with the decisions. An agent being deleted stops everything regardless.
   */
  async stopRuns(
    tenantId: string,
    agentId: string,
    runIds: string[] | null,
    why: 'cancel' | 'delete',
  ): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    const wanted = (id: string) => !runIds || runIds.includes(id);
    if (why === 'cancel') {
      const parked = await this.repo.findParkedRun(tenantId, agentId);
      if (parked && wanted(parked.id)) {
        await this.cancelParked(parked);
        out[parked.id] = 'cancelled';
      } else {
        await this.assertNoDecisionSettling(tenantId, agentId, wanted);
      }
    }
    // from the database: the agent's runs may be queued or running on another instance (a cancelling
    // continuation, as cancelParked just made, is the cancellation itself)
    const queued = await this.repo.runsOfAgent(agentId, 'created');
    for (const run of queued.filter((r) => wanted(r.id) && !r.input.cancel)) {
      if (await this.repo.cancelQueuedRun(run, this.clock.now())) {
        if (run.input.callback_url) this.callbacks.kick(); // stored with the end
        this.mailbox.remove(agentId, run.id);
        this.publishEnd(tenantId, agentId, run.id, 'cancelled');
        this.queuedRuns.delete(run.id);
        this.settle(run.id, null);
        out[run.id] = 'cancelled';
      }
    }
    // (a run is `running` in the database before it is active here)
    const running = (await this.repo.runsOfAgent(agentId, 'running')).filter(
      (r) => wanted(r.id) && !r.input.cancel,
    );
    // stored first, here too: a run whose end is then not stored (its instance dies before the event
    // reaches it, or its end write fails) is recovered as cancelled, what this answers
    if (running.length) await this.repo.requestCancel(running);
    const elsewhere: RunEntity[] = [];
    for (const run of running) {
      if (!this.processor.abort(run.id, 'cancelled')) elsewhere.push(run);
      out[run.id] = 'cancelled';
    }
    if (elsewhere.length)
      this.events.publish('run.cancel', { agentId, runIds: elsewhere.map((r) => r.id) });
    const parked = why === 'delete' ? await this.repo.findParkedRun(tenantId, agentId) : null;
    if (parked && wanted(parked.id)) {
      const calls = awaitingAnswer(parked.parked ?? []);
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

  /** Denies a parked batch's requests and claims it for a cancelling continuation, or 409 if a decision won. */
  private async cancelParked(parked: RunEntity): Promise<void> {
    const cont = this.continuationOf(parked, { cancel: true });
    const r = await this.consent.cancelPending(
      parked.tenant_id,
      parked.agent_id,
      awaitingAnswer(parked.parked ?? []),
      'cancelled',
      (em) => this.repo.insertContinuation(parked.id, cont, em),
    );
    if (!r.cancelled) {
      const fresh = await this.repo.findRunById(parked.id);
      throw alreadyDecided(r.requests, fresh?.continued_by ?? null);
    }
    this.enqueue(cont, true);
  }

  /**
   * A decision's continuation runs the decided calls first; until every one of them has its return, a
   * cancel has lost to the decision (the approved call runs, as the decision answered).
   */
  private async assertNoDecisionSettling(
    tenantId: string,
    agentId: string,
    wanted: (id: string) => boolean,
  ): Promise<void> {
    const parked = await this.repo.lastContinuedRun(tenantId, agentId);
    if (!parked?.continued_by) return;
    const cont = await this.repo.findRunById(parked.continued_by);
    if (!cont || cont.input.cancel || isFinal(cont.status) || !wanted(cont.id)) return;
    // the decided calls: a held one is judged after them, and a cancel may still stop it
    const calls = awaitingAnswer(parked.parked ?? []);
    // a call is its tool_call_id in its step: an earlier step's return of a reused id is not its own
    const answered = new Set(
      (await this.repo.batchMessages(parked.batch_id, ['tool_return_message'])).map((m) =>
        stepCallKey(m.step_id, String(m.payload.tool_call_id)),
      ),
    );
    if (calls.every((c) => answered.has(stepCallKey(c.step_id, c.tool_call_id)))) return;
    throw alreadyDecided(await this.consent.requests(tenantId, agentId, calls), cont.id);
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
    const calls = awaitingAnswer(parked?.parked ?? []);
    if (!parked || calls.length === 0) {
      const ids = req.approvals!.map((a) => a.tool_call_id).filter(Boolean);
      const known = ids.length
        ? await this.consent.requests(
            tenantId,
            agentId,
            ids.map((id) => ({ tool_call_id: id })),
          )
        : [];
      // the same answer sent again (a client retrying after a network error): as Letta's, a follow-up.
      // An answer that differs from the decision stored (a cancel or another dialog won) is not one.
      const same = req.approvals!.every((a) => {
        const r = known.find((k) => k.tool_call_id === a.tool_call_id);
        return !r || r.status === (a.approve === false ? 'denied' : 'approved');
      });
      if (
        ids.length &&
        same &&
        (await this.repo.hasRecentToolReturns(agentId, req.conversationId, ids))
      ) {
        const messages = req.messages.length ? req.messages : [KEEP_ALIVE];
        const followUp = { ...req, approvals: null, legacyApproval: null, messages };
        return this.submit(tenantId, agentId, followUp, mode, beforeQueue);
      }
      // answering a request someone else (a cancel, another dialog) resolved first: 409 with that outcome
      if (known.some((r) => r.status !== 'pending')) throw alreadyDecided(known, null);
      // Letta's words: Letta Code matches on them
      throw badRequest(
        'NO_PENDING_APPROVAL',
        `Cannot process approval response: No tool call is currently awaiting approval (agent ${agentId} has no pending approval request)`,
      );
    }
    let approvals: InBandApproval[] = req.approvals!;
    if (req.legacyApproval)
      approvals = await this.legacyAnswers(tenantId, parked, req.legacyApproval, approvals[0]);
    assertAnswersFit(calls, approvals);
    const pendingIds = new Set(calls.map((c) => c.tool_call_id));
    const given = new Set(approvals.map((a) => a.tool_call_id));
    if (
      given.size !== approvals.length ||
      given.size !== pendingIds.size ||
      [...given].some((id) => !pendingIds.has(id))
    ) {
      throw badRequest(
        'APPROVAL_MISMATCH',
        // Letta's words (letta/agents/helpers.py): Letta Code matches on them
        `Invalid tool call IDs. Expected '${JSON.stringify([...pendingIds])}', but received '${JSON.stringify([...given])}': the approvals must answer exactly the pending tool calls`,
        { pending_tool_call_ids: [...pendingIds] },
      );
    }
    // the continuation is stored (and claims the parked run) before the decisions, so that the
    // broker's decision listener finds it claimed; it is queued once every decision is recorded
    const cont = this.newRun(tenantId, agentId, parked.conversation_id, parked.batch_id, {
      kind: 'resume',
      mode,
      messages: req.messages,
      max_steps: req.maxSteps,
      budgets: req.budgets,
      ...(req.streamTokens ? { stream_tokens: true } : {}),
      ...(req.background ? { background: true } : {}),
      ...clientToolsFor(req.clientTools, parked),
      ...(req.callbackUrl ? { callback_url: req.callbackUrl } : {}),
      ...viewInput(req.view),
      ...this.modelFor(req),
      resumes_run_id: parked.id,
      approvals: approvals.map((a) => ({
        tool_call_id: a.tool_call_id,
        approve: a.approve,
        reason: a.reason ?? null,
        ...(a.tool_return !== undefined ? { tool_return: a.tool_return, status: a.status } : {}),
      })),
    });
    if (!(await this.repo.insertContinuation(parked.id, cont))) {
      throw conflict('ALREADY_RESOLVED', 'the pending request was already answered');
    }
    try {
      // a client tool's answer is its result, not a person's decision: the broker never asked for it
      // each on the parked call's own request: an older call may have had the same tool_call_id
      for (const a of approvals) {
        const call = calls.find((c) => c.tool_call_id === a.tool_call_id)!;
        if (!call.client) await this.consent.decide(tenantId, agentId, a, call.request_id);
      }
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
   * Letta's legacy form answers the pending approval request as a whole: the id it names is the
   * approval_request_message's (what `agent.pending_approval.id` shows; any of the parked run's ones), or
   * absent. Our consent request id or a tool_call_id names one call, which fits only when it is the only one.
   */
  private async legacyAnswers(
    tenantId: string,
    parked: RunEntity,
    legacy: { approvalRequestId: string | null },
    answer: InBandApproval,
  ): Promise<InBandApproval[]> {
    const calls = awaitingAnswer(parked.parked ?? []);
    const id = legacy.approvalRequestId;
    const requestMessages =
      id === null
        ? []
        : (await this.repo.runMessages(tenantId, parked.id)).filter(
            (m) => m.message_type === 'approval_request_message',
          );
    const answered =
      id === null || requestMessages.some((m) => m.id === id)
        ? calls
        : calls.filter((c) => c.request_id === id || c.tool_call_id === id);
    if (answered.length === 0 || answered.length !== calls.length) {
      throw badRequest(
        'APPROVAL_MISMATCH',
        `Invalid tool call IDs. Expected '${JSON.stringify(calls.map((c) => c.tool_call_id))}', but received '${JSON.stringify([id])}': approval_request_id does not match the pending approval request`,
        {
          approval_request_id: requestMessages[0]?.id ?? null,
          pending: calls.map((c) => ({ request_id: c.request_id, tool_call_id: c.tool_call_id })),
        },
      );
    }
    return answered.map((c) => ({ ...answer, tool_call_id: c.tool_call_id }));
  }

  /**
   * A decision on one of the agent's calls was stored. When the batch parked in this process and this
   * decision was the last one it waited for, the batch continues at once, from memory (no read); any
   * other case asks the database (resumeIfDecided), e.g. after a restart, when another instance parked
   * it, or when decisions on other calls of the batch may have been stored elsewhere.
   */
  private async resumeAfterDecision(
    tenantId: string,
    agentId: string,
    requestId: string,
  ): Promise<void> {
    const parked = this.repo.parkedHere(agentId);
    if (
      parked?.run.tenant_id === tenantId &&
      parked.undecided.delete(requestId) &&
      parked.undecided.size === 0 &&
      !parked.run.parked!.some(waitsForClient) &&
      this.leases.holds(agentId)
    ) {
      await this.resume(parked.run, {});
      return;
    }
    await this.resumeIfDecided(tenantId, agentId);
  }

  /**
   * In a decision's own transaction: when it is the last one the batch parked here waits for, the
   * continuation is stored with it (one commit fewer on the way to the tool). Null: it was not, or the
   * batch was continued already (resumeAfterDecision then decides, as for any other decision).
   */
  private async continueWithDecision(
    e: ConsentDecisionEvent,
    em: EntityManager,
  ): Promise<RunEntity | null> {
    const parked = this.repo.parkedHere(e.agentId);
    if (
      parked?.run.tenant_id !== e.tenantId ||
      parked.undecided.size !== 1 ||
      !parked.undecided.has(e.requestId) ||
      parked.run.parked!.some(waitsForClient) ||
      !this.leases.holds(e.agentId)
    )
      return null;
    const cont = this.continuationOf(parked.run, {});
    return (await this.repo.insertContinuation(parked.run.id, cont, em)) ? cont : null;
  }

  /**
   * Continues the agent's parked batch once every parked call has a stored decision. Asked after each
   * decision, after a run parks, and at boot, and answered from the database alone, so a decision that
   * lands while its run is still parking, or just before a crash, is never lost.
   */
  async resumeIfDecided(tenantId: string, agentId: string): Promise<void> {
    const parked = await this.repo.findParkedRun(tenantId, agentId);
    // a call the client must run waits for the client's answer, whatever people decide
    if (!parked?.parked?.length || parked.parked.some(waitsForClient)) return;
    const ids = awaitingAnswer(parked.parked).map((c) => c.tool_call_id);
    if ((await this.consent.undecided(tenantId, agentId, ids)).length === 0) {
      await this.resume(parked, {});
    }
  }

  /**
   * Continues a parked batch in a new run; idempotent: the first caller creates the continuation,
   * later ones get the same run id.
   */
  async resume(parked: RunEntity, opts: { cancel?: boolean }): Promise<string | null> {
    const cont = this.continuationOf(parked, opts);
    if (await this.repo.insertContinuation(parked.id, cont)) {
      this.enqueue(cont, true);
      return cont.id;
    }
    return (await this.repo.findRunById(parked.id))?.continued_by ?? null;
  }

  // ------------------------------------------------------------ internals

  private continuationOf(parked: RunEntity, opts: { cancel?: boolean }): RunEntity {
    return this.newRun(parked.tenant_id, parked.agent_id, parked.conversation_id, parked.batch_id, {
      kind: 'resume',
      mode: 'async',
      messages: [],
      ...clientToolsFor([], parked),
      resumes_run_id: parked.id,
      ...(opts.cancel ? { cancel: true } : {}),
    });
  }

  /**
   * Does `work` in the agent's turn on this instance, after the batch in progress and before messages
   * sent later, so it never interleaves with a batch's tool calls (cooldowns, dedupe, claims stay exact).
   * 409 AGENT_ELSEWHERE when another instance holds the agent; 503 AGENT_RECOVERING when taking it failed
   * (its unfinished runs could not be recovered: the database refuses writes); 503 SHUTTING_DOWN.
   */
  async inAgentTurn<T>(tenantId: string, agentId: string, work: () => Promise<T>): Promise<T> {
    this.assertOpen();
    if (
      !this.leases.holds(agentId) &&
      !(await this.serially(agentId, () => this.take(tenantId, agentId)))
    )
      throw new DomainError(
        'unavailable',
        'AGENT_RECOVERING',
        `agent ${agentId}'s state is being recovered (a write of its last run failed, and the database still refuses it); retry later`,
        { agent_id: agentId },
      );
    if (!this.leases.holds(agentId))
      throw conflict('AGENT_ELSEWHERE', `another instance processes agent ${agentId}; retry`, {
        agent_id: agentId,
      });
    return new Promise<T>((resolve, reject) => {
      const turn = {
        run: () => work().then(resolve, reject),
        abandon: () =>
          reject(
            new DomainError(
              'unavailable',
              'TURN_DROPPED',
              `the server is shutting down or another instance took agent ${agentId}; retry`,
            ),
          ),
      };
      const job = {
        runId: this.ids.prefixed('turn'),
        tenantId,
        priority: false,
        createdAt: this.clock.now(),
        turn,
      };
      if (!this.mailbox.enqueue(agentId, job)) turn.abandon();
    });
  }

  /** Queues a stored run here when this instance holds (or can take) its agent, else wakes the holder. */
  enqueue(run: RunEntity, priority: boolean): void {
    // lease work already under way for the agent (taking it, then queueing its stored runs) goes first:
    // a run queued here in between would start before the older runs that work is about to queue
    if (this.agentWork.has(run.agent_id))
      void this.serially(run.agent_id, () => Promise.resolve(this.enqueueNow(run, priority)));
    else this.enqueueNow(run, priority);
  }

  private enqueueNow(run: RunEntity, priority: boolean): void {
    if (this.leases.holds(run.agent_id)) return this.enqueueHere(run, priority);
    void this.serially(run.agent_id, () => this.take(run.tenant_id, run.agent_id));
  }

  private enqueueHere(run: RunEntity, priority: boolean): void {
    if (this.queuedRuns.has(run.id) || this.processor.isActive(run.id)) return;
    this.queuedRuns.set(
      run.id,
      this.mailbox.waiting(run.agent_id) === 0
        ? run
        : { id: run.id, tenant_id: run.tenant_id, agent_id: run.agent_id },
    );
    const job = { runId: run.id, tenantId: run.tenant_id, priority, createdAt: run.created_at };
    if (!this.mailbox.enqueue(run.agent_id, job)) {
      this.queuedRuns.delete(run.id);
      this.logger.warn(`run ${run.id} stays queued: shutting down`);
    }
  }

  // ------------------------------------------------------------ agent ownership

  /** Runs lease work for one agent after the work queued before it; false when it failed (logged). */
  private serially(agentId: string, work: () => Promise<void>): Promise<boolean> {
    const next = (this.agentWork.get(agentId) ?? Promise.resolve(true))
      .then(() => work())
      .then(
        () => true,
        (e: unknown) => {
          this.logger.error(`agent ${agentId}: ${String(e)}`);
          return false;
        },
      );
    this.agentWork.set(agentId, next);
    void next.finally(() => {
      if (this.agentWork.get(agentId) === next) this.agentWork.delete(agentId);
    });
    return next;
  }

  /** Takes the agent's lease and queues its stored runs; when another instance holds it, wakes that one. */
  private async take(tenantId: string, agentId: string): Promise<void> {
    if (this.mailbox.isClosed) return;
    const got = await this.leases.acquire(tenantId, agentId);
    if (!got) {
      this.events.publish('agent.wake', { tenantId, agentId });
      return;
    }
    if (got === 'fresh') {
      try {
        await this.adopt(agentId);
      } catch (e) {
        // not recovered (the database still refuses writes, say): nothing of the agent runs here until
        // a later take (the next message, the keeper's sweep) recovers it
        this.leases.forget(agentId);
        throw e;
      }
      // decisions stored while no instance was there to continue the batch: its continuation is stored
      // before the queue is read, so that it goes ahead of the messages waiting behind the batch
      await this.resumeIfDecided(tenantId, agentId);
    }
    await this.syncQueue(agentId);
  }

  /**
   * The agent was not held here just before: whatever this instance remembers of it may be stale, and
   * runs left `running` belong to an instance that died or lost it (this one included). Drop the one,
   * recover the other.
   */
  private async adopt(agentId: string): Promise<void> {
    // A run still going here is from the tenure this instance lost, whether or not another instance has
    // ended it since (its writes would pass the fence under the new token): it stops before anything is
    // read, and is then recovered as it left itself, if still `running`.
    await Promise.all(
      this.processor.activeRunIds(agentId).map((id) => this.processor.stop(id, 'interrupted')),
    );
    this.repo.forget(agentId);
    this.agents.forget(agentId);
    this.exec.forgetAgent(agentId, await this.repo.openBatchIds(agentId));
    for (const run of await this.repo.runsOfAgent(agentId, 'running'))
      await this.recovery.interrupt(run);
  }

  /**
   * Queues the agent's stored runs this instance does not know yet, in their order, continuations first:
   * the first run queued starts at once, and a message run that started while a batch's continuation
   * waited would find no parked batch and start a batch of its own before it.
   */
  private async syncQueue(agentId: string): Promise<void> {
    const runs = await this.repo.runsOfAgent(agentId, 'created');
    for (const run of runs) if (run.input.kind === 'resume') this.enqueueHere(run, true);
    for (const run of runs) if (run.input.kind !== 'resume') this.enqueueHere(run, false);
  }

  /** The agent went to another instance: stop its work here (its queued runs are that one's now). */
  private dropAgent(agentId: string, why: string): void {
    for (const id of this.mailbox.dropAgent(agentId)) this.queuedRuns.delete(id);
    this.holding.delete(agentId);
    for (const id of this.processor.activeRunIds(agentId)) this.processor.abort(id, 'interrupted');
    this.repo.forget(agentId);
    this.agents.forget(agentId);
    this.logger.warn(`agent ${agentId} is no longer held here (${why})`);
  }

  /** Boot: takes the agents with unfinished runs that no live instance holds; answers how many. */
  async takeOrphanedAgents(): Promise<number> {
    const orphans = await this.leases.orphaned(
      this.clock.now() - this.config.cluster.lease_renew_interval_ms,
    );
    await Promise.all(
      orphans.map((o) => this.serially(o.agentId, () => this.take(o.tenantId, o.agentId))),
    );
    return orphans.length;
  }

  /**
   * Every renewal interval: renew the leases of busy agents (stop work on the ones lost), release idle
   * ones, take orphaned agents (a dead instance's, or runs whose wake-up was lost), and settle callers
   * waiting here on runs another instance ended (in case the bus lost that event).
   */
  startLeaseKeeper(): void {
    this.keeper = setInterval(() => {
      if (this.keeping) return;
      this.keeping = this.keepLeases()
        .catch((e: unknown) => this.logger.error(`lease keeper: ${String(e)}`))
        .finally(() => (this.keeping = null));
    }, this.config.cluster.lease_renew_interval_ms);
    this.keeper.unref();
  }

  stopLeaseKeeper(): void {
    if (this.keeper) clearInterval(this.keeper);
    this.keeper = null;
  }

  /** Shutdown: every agent goes back (the mailbox is closed and idle by then). */
  async releaseAllAgents(): Promise<void> {
    await this.keeping;
    await this.leases.releaseAll().catch((e: unknown) => {
      this.logger.warn(`could not release the agents' leases: ${String(e)}`);
    });
  }

  private async keepLeases(): Promise<void> {
    for (const id of await this.leases.renew(this.mailbox.busyAgents()))
      this.dropAgent(id, 'its lease could not be renewed');
    // idle now (an agent may have become busy while the renewal ran)
    const busy = new Set(this.mailbox.busyAgents());
    await this.leases.release(this.leases.held().filter((id) => !busy.has(id)));
    if (!this.mailbox.isClosed) await this.takeOrphanedAgents();
    const remote = [...this.waiters.keys()].filter((id) => !this.queuedRuns.has(id));
    for (const id of await this.repo.finishedRunIds(remote)) this.settle(id, null);
  }

  private assertOpen(): void {
    if (this.mailbox.isClosed) {
      throw new DomainError('unavailable', 'SHUTTING_DOWN', 'the server is shutting down');
    }
  }

  private newRun(
    tenantId: string,
    agentId: string,
    conversationId: string | null,
    batchId: string,
    input: RunInput,
  ): RunEntity {
    return {
      conversation_id: conversationId,
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

/**
 * Letta's request dedupe: a send whose messages all carry otids (Letta Code's; retries reuse them) is the
 * send with the same otids before it, whose run answers it (submit then calls no `beforeQueue`: a stream
 * caller resumes that run's stream). The key is a digest of the otids; none when one is missing.
 */
function requestKey(req: SendMessageRequest): string | null {
  if (req.messages.length === 0 || req.messages.some((m) => !m.otid)) return null;
  const otids = JSON.stringify(req.messages.map((m) => m.otid));
  return createHash('sha256').update(otids).digest('hex');
}

/** Letta's message for an approval sent again with nothing else (letta/agents/helpers.py). */
const KEEP_ALIVE = {
  role: 'user' as const,
  content:
    '<system-alert>Automated keep-alive ping. Ignore this message and continue from where you stopped.</system-alert>',
};

/** A call the client must run, and has not answered yet (recovery carries an answer it gave). */
const waitsForClient = (c: ParkedCall): boolean => c.client !== undefined && !c.client.answer;

/** A continuation offers the request's client tools, else those of the run it continues. */
/** The request's message view, kept with its run (Letta's `request_config`) where not the default. */
function viewInput(
  view: LettaView,
): Pick<RunInput, 'use_assistant_message' | 'include_return_message_types'> {
  return {
    ...(view.useAssistantMessage ? {} : { use_assistant_message: false as const }),
    ...(view.types ? { include_return_message_types: [...view.types] } : {}),
  };
}

function clientToolsFor(
  given: ClientToolSpec[],
  parked: RunEntity,
): Pick<RunInput, 'client_tools'> {
  const tools = given.length ? given : parked.input.client_tools;
  return tools?.length ? { client_tools: tools } : {};
}

/**
 * A call parked for the client is answered with its result (Letta's ToolReturn) or refused; one parked
 * for consent is answered by a decision, never by a result (the client may not run it unapproved).
 */
function assertAnswersFit(calls: ParkedCall[], answers: InBandApproval[]): void {
  for (const a of answers) {
    const call = calls.find((c) => c.tool_call_id === a.tool_call_id);
    if (!call) continue; // the set comparison that follows reports it
    if (call.client && a.tool_return === undefined && a.approve) {
      throw badRequest(
        'CLIENT_TOOL_RESULT_REQUIRED',
        `${call.name} runs on the client: answer ${call.tool_call_id} with {type: "tool", tool_call_id, tool_return, status}`,
        { tool_call_id: call.tool_call_id },
      );
    }
    if (!call.client && a.tool_return !== undefined) {
      throw badRequest(
        'CONSENT_REQUIRED',
        `${call.name} waits for a person's approval; the client may not run it before that`,
        { tool_call_id: call.tool_call_id, request_id: call.request_id },
      );
    }
  }
}

/** How a wait ends: the result in memory, null (read it back), or the server going down. */
type Settled = BatchResult | null | 'shutdown';

const isFinal = (s: RunEntity['status']) =>
  s === 'completed' || s === 'failed' || s === 'cancelled';

/** A cancel or an answer that lost to a decision: 409 with what was decided and the run that carries it out. */
function alreadyDecided(requests: DecidedCall[], runId: string | null): DomainError {
  const first = requests.find((r) => r.status !== 'pending') ?? requests[0];
  const what = !first
    ? 'the pending request was already answered'
    : first.status === 'pending'
      ? `${first.tool_name} (request ${first.request_id}) is being answered in band`
      : `${first.tool_name} (request ${first.request_id}) was already decided: ${first.decision} by ${first.decided_by}`;
  const by = runId ? `; run ${runId} carries it out` : '; the batch continues with it';
  return conflict('ALREADY_RESOLVED', `${what}${by}`, {
    request_id: first?.request_id ?? null,
    decision: first?.decision ?? null,
    decided_by: first?.decided_by ?? null,
    reason: first?.reason ?? null,
    run_id: runId,
    requests,
  });
}

const isLeaseLost = (e: unknown) => e instanceof DomainError && e.code === 'LEASE_LOST';
