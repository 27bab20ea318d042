import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import stableStringify from 'json-stable-stringify';
import { LRUCache } from 'lru-cache';
import { EVENT_BUS, type EventBus } from '../cluster/event-bus';
import { approxBytes } from '../common/approx-bytes';
import { CLOCK } from '../common/clock';
import {
  badRequest,
  conflict,
  DomainError,
  notFound,
  validationFailed,
} from '../common/domain-error';
import { ID_GENERATOR, isPrefixedId } from '../common/ids';
import type { PageBounds, PageQuery } from '../common/list-page';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import type { ConsentCheck, ConsentCheckRequest, ConsentPort } from '../core/executor/contracts';
import {
  ConsentChannel,
  ConsentDecision,
  createsGrant,
  DecisionInput,
  grantExpiry,
  isApproval,
  validateDecisionInput,
} from '../core/permissions/consent-decision';
import { ConstraintCompiler } from '../core/permissions/constraint';
import { findCoveringGrant, GrantView } from '../core/permissions/grant-matching';
import {
  CONSUMED_REASON,
  dueForExpiry,
  isExpired,
  recheckAction,
  TIMEOUT_REASON,
} from '../core/permissions/request-state';
import type { Clock, IdGenerator } from '../core/ports';
import type { EntityManager } from 'typeorm';
import { GroupCommit } from '../database/group-commit';
import { Transactor } from '../database/transactor';
import {
  AuditEvent,
  ConsentAuditEntity,
  ConsentGrantEntity,
  ConsentRequestEntity,
} from './consent.entities';
import { AuditQuery, ConsentRepository, Resolution } from './consent.repository';

/** A resolved request, as decision listeners (processing, the gateway) get it. */
export interface ConsentResolved {
  tenantId: string;
  agentId: string;
  runId: string;
  batchId: string;
  requestId: string;
  toolCallId: string;
  toolName: string;
  decision: ConsentDecision;
  approve: boolean;
  reason: string | null;
  /** The deciding tenant, or 'system' (timeout, cancellation). */
  decidedBy: string;
  channel: ConsentChannel;
  cause: 'decision' | 'timeout' | 'cancelled';
  grantId: string | null;
  createdAt: number;
  decidedAt: number;
}

/**
 * A tool call as processing names it: its tool_call_id, and the consent request it parked with when
 * known. A tool_call_id alone may name several calls of an agent (a provider that reuses ids across
 * responses): by id alone, the newest request of the id is meant.
 */
export interface CallRef {
  toolCallId: string;
  requestId?: string | null;
}

/** A decision as Letta's in-band approval carries it, with our optional grant. */
export interface ToolCallDecision {
  approve: boolean;
  reason?: string | null;
  grant?: { decision: string; seconds?: number; constraint?: unknown } | null;
}

type Listener<T> = (event: T) => void | Promise<void>;

/**
 * A decision listener with a part in the decision's own transaction: `write` runs there once the decision
 * won (it may run more than once: a group commit retries job by job), `after` after the commit, with what
 * the committed `write` returned.
 */
export interface DecisionFollower<T> {
  write(event: ConsentResolved, em: EntityManager): Promise<T>;
  after(event: ConsentResolved, written: T): void;
}

/** How often pending requests are checked for expiry. */
const SWEEP_INTERVAL_MS = 1000;
/** Old grants are pruned this often (a sweep of the whole table: not at every expiry sweep). */
const PRUNE_INTERVAL_MS = 3_600_000;
/** What a decision's transaction answers when its grant would pass consent.max_active_grants_per_agent. */
const GRANT_LIMIT = Symbol('GRANT_LIMIT');
const SYSTEM = 'system';
const MAX_CACHED_PENDING = 10_000;

/**
 * The PermissionBroker: answers the executor's consent checks (standing grant, earlier decision, or a new
 * pending request), records decisions from any channel (first one wins), expires requests, and tells
 * listeners. Everything is stored before anyone is told.
 */
@Injectable()
export class PermissionBrokerService
  implements ConsentPort, OnApplicationBootstrap, OnApplicationShutdown
{
  private readonly logger = new Logger('Permissions');
  private readonly constraints = new ConstraintCompiler();
  private readonly decisionListeners: Listener<ConsentResolved>[] = [];
  private readonly decisionFollowers: DecisionFollower<unknown>[] = [];
  private readonly requestListeners: Listener<ConsentRequestEntity>[] = [];
  private readonly cancelListeners: Listener<ConsentResolved>[] = [];
  private timer: NodeJS.Timeout | null = null;
  /**
   * Pending requests created by this process, by id: a decision needs no read first. Only a hint: the
   * conditional UPDATE decides who wins, so a stale entry (another server resolved it) cannot do harm.
   */
  private readonly pendingById: LRUCache<string, ConsentRequestEntity>;
  /**
   * Requests resolved in this process, by id, until the call's re-check takes them: the continuation
   * that re-checks the call (naming its request) needs no read. A hint like pendingById: using an
   * approval is a conditional UPDATE, so a row someone else changed meanwhile fails closed.
   */
  private readonly resolvedById: LRUCache<string, ConsentRequestEntity>;
  private sweeping: Promise<number> | null = null;

  constructor(
    private readonly repo: ConsentRepository,
    private readonly tx: Transactor,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    /** Request, decision and consumption writes share transactions with each other and the app's. */
    private readonly writes: GroupCommit,
    @Inject(EVENT_BUS) private readonly bus: EventBus,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    // a request holds the call's arguments: bounded by their size too
    const bounds = {
      max: MAX_CACHED_PENDING,
      maxSize: config.database.record_cache_bytes,
      sizeCalculation: (row: ConsentRequestEntity) => Math.max(1, approxBytes(row)),
    };
    this.pendingById = new LRUCache(bounds);
    this.resolvedById = new LRUCache(bounds);
  }

  // ------------------------------------------------------------ listeners

  /**
   * Called once per resolution by a person or by the expiry (after it is stored). Register in a constructor
   * or onModuleInit: requests that expired while the server was down are denied in onApplicationBootstrap.
   * Denials made through denyPendingForCalls are not reported here: their caller continues the batch itself.
   * WebSocket clients learn of requests and resolutions from the event bus (every instance's).
   * Returns an unsubscribe function.
   */
  onDecision(listener: Listener<ConsentResolved>): () => void {
    return add(this.decisionListeners, listener);
  }

  /** Like onDecision, with writes in the decision's transaction (processing: the batch's continuation). */
  followDecisions<T>(follower: DecisionFollower<T>): () => void {
    return add(this.decisionFollowers, follower as DecisionFollower<unknown>);
  }

  /** Called for every new pending request made in this instance (after it is stored). */
  onRequest(listener: Listener<ConsentRequestEntity>): () => void {
    return add(this.requestListeners, listener);
  }

  /** Cancellation denials made in this instance; decision listeners are not told. */
  onCancelled(listener: Listener<ConsentResolved>): () => void {
    return add(this.cancelListeners, listener);
  }

  // ------------------------------------------------------------ the executor's port

  async check(req: ConsentCheckRequest): Promise<ConsentCheck> {
    const now = this.clock.now();
    // a call the model has just made (requestId null) has no request yet: an older one with its
    // tool_call_id is another call's (a provider that reuses ids), never looked for
    const existing =
      req.requestId === null
        ? null
        : req.requestId !== undefined
          ? await this.requestOf(req.tenantId, req.agentId, req.requestId, true)
          : await this.repo.findRequestForCall(req.tenantId, req.agentId, req.toolCallId);
    if (existing) return this.recheck(existing, req);

    const grants = await this.repo.candidateGrants(req.tenantId, req.agentId, req.scope, now);
    const grant = findCoveringGrant(
      grants.map(toGrantView),
      { agentId: req.agentId, scope: req.scope, arguments: req.arguments },
      now,
      this.constraints,
    );
    if (grant) {
      await this.repo.audit({
        ...this.callAudit('grant.used', req, now),
        grantId: grant.id,
        decision: grant.decision,
      });
      return { kind: 'granted', grantId: grant.id };
    }
    if (req.grantsOnly) return { kind: 'required' };

    const row: ConsentRequestEntity = {
      id: this.ids.prefixed('consent'),
      tenantId: req.tenantId,
      agentId: req.agentId,
      runId: req.runId,
      batchId: req.batchId,
      toolCallId: req.toolCallId,
      toolName: req.toolName,
      arguments: req.arguments,
      scope: req.scope,
      reason: `${req.toolName} requires consent (scope "${req.scope}")`,
      status: 'pending',
      decision: null,
      decisionReason: null,
      decidedBy: null,
      channel: null,
      decidedAt: null,
      grantId: null,
      consumedAt: null,
      createdAt: now,
      expiresAt: now + Math.max(0, req.timeoutMs),
    };
    const max = this.config.consent.max_pending_per_agent;
    const stored = await this.writes.run(async (em) => {
      // counted in the transaction that stores it: concurrent checks cannot overshoot together
      if ((await this.repo.countPending(req.tenantId, req.agentId, em)) >= max) return false;
      await this.repo.insertRequest(row, em);
      await this.repo.audit(
        { ...this.requestAudit('request.created', row, SYSTEM, 'system', now) },
        em,
      );
      return true;
    });
    // fails closed: no one can be asked, so the call is refused (the model reads why), never run
    if (!stored)
      return {
        kind: 'denied',
        reason: `TOO_MANY_PENDING_CONSENT: ${max} consent requests of this agent already wait for a person (consent.max_pending_per_agent); not run`,
      };
    this.pendingById.set(row.id, row);
    this.emit(this.requestListeners, row);
    // every instance's WebSocket clients see it
    this.bus.publish('consent.request', row);
    return { kind: 'pending', requestId: row.id };
  }

  /**
   * The agent's request by id (null: none, or another agent's). `recheck`: the call's re-check, which
   * takes the copy this process resolved, if any, instead of reading it.
   */
  private async requestOf(
    tenantId: string,
    agentId: string,
    requestId: string,
    recheck = false,
  ): Promise<ConsentRequestEntity | null> {
    const resolved = recheck ? this.resolvedById.get(requestId) : undefined;
    if (resolved) this.resolvedById.delete(requestId);
    const row = resolved ?? (await this.repo.findRequest(tenantId, requestId));
    return row?.tenantId === tenantId && row.agentId === agentId ? row : null;
  }

  /** The request a call names (its own), else the newest of its tool_call_id. */
  private async requestForCall(
    tenantId: string,
    agentId: string,
    call: CallRef,
  ): Promise<ConsentRequestEntity | null> {
    return call.requestId
      ? this.requestOf(tenantId, agentId, call.requestId)
      : this.repo.findRequestForCall(tenantId, agentId, call.toolCallId);
  }

  /** A call that already has a request: still waiting, approved (used once), or denied. */
  private async recheck(
    row: ConsentRequestEntity,
    req: ConsentCheckRequest,
    depth = 0,
  ): Promise<ConsentCheck> {
    const now = this.clock.now();
    const action = recheckAction(row, now);
    switch (action.action) {
      case 'pending':
        return { kind: 'pending', requestId: row.id };
      case 'expire': {
        await this.expire(row, now);
        const fresh = await this.repo.findRequest(row.tenantId, row.id);
        if (!fresh || fresh.status === 'pending' || depth > 0)
          return { kind: 'denied', reason: TIMEOUT_REASON, requestId: row.id };
        return this.recheck(fresh, req, depth + 1);
      }
      case 'consume': {
        // the approval was for this call as shown; a different call under the same id is not covered
        if (
          row.toolName !== req.toolName ||
          stableStringify(row.arguments) !== stableStringify(req.arguments)
        )
          return {
            kind: 'denied',
            reason: 'the call differs from the one that was approved',
            requestId: row.id,
          };
        const used = await this.writes.run(async (em) => {
          if (!(await this.repo.consumeApproval(row.id, now, em))) return false;
          await this.repo.audit(
            {
              ...this.requestAudit('approval.used', row, SYSTEM, 'system', now),
              decision: row.decision,
            },
            em,
          );
          return true;
        });
        return used
          ? { kind: 'approved', requestId: row.id }
          : { kind: 'denied', reason: CONSUMED_REASON, requestId: row.id };
      }
      case 'denied':
        return { kind: 'denied', reason: action.reason, requestId: row.id };
    }
  }

  // ------------------------------------------------------------ decisions

  /** A person's decision on a request (WebSocket frame or REST). 404 for another tenant's; 409 ALREADY_RESOLVED. */
  async decide(
    tenantId: string,
    requestId: string,
    raw: Record<string, unknown>,
    channel: Exclude<ConsentChannel, 'system'>,
  ): Promise<{ request: ConsentRequestEntity; grant: ConsentGrantEntity | null }> {
    const v = validateDecisionInput(raw, this.constraints, this.config.limits);
    if (!v.ok) throw validationFailed(v.problems, 'decision is invalid');
    const cached = this.pendingById.get(requestId);
    const row =
      cached?.tenantId === tenantId ? cached : await this.repo.findRequest(tenantId, requestId);
    if (!row) throw notFound('consent request', requestId);
    if (row.status !== 'pending') throw alreadyResolved(row);
    const now = this.clock.now();
    if (isExpired(row.expiresAt, now)) {
      // fails closed: an answer after the deadline does not run the call
      await this.expire(row, now);
      throw alreadyResolved((await this.repo.findRequest(tenantId, requestId)) ?? row);
    }
    return this.resolve(row, v.value, tenantId, channel, now);
  }

  /**
   * Letta's in-band approval: the request of this tool call, by the agent's tool_call_id (the parked
   * call's own request when `requestId` names it; else the newest of the id).
   */
  async decideByToolCall(
    tenantId: string,
    agentId: string,
    toolCallId: string,
    d: ToolCallDecision,
    channel: Exclude<ConsentChannel, 'system'> = 'rest',
    requestId?: string | null,
  ): Promise<{ request: ConsentRequestEntity; grant: ConsentGrantEntity | null }> {
    const row = await this.requestForCall(tenantId, agentId, { toolCallId, requestId });
    if (!row)
      throw badRequest('NO_PENDING_APPROVAL', `no consent request for tool_call_id ${toolCallId}`, {
        tool_call_id: toolCallId,
      });
    const raw: Record<string, unknown> = d.approve
      ? {
          decision: d.grant?.decision ?? 'approve_once',
          seconds: d.grant?.seconds,
          constraint: d.grant?.constraint,
          reason: d.reason ?? undefined,
        }
      : { decision: 'deny', reason: d.reason ?? undefined };
    if (d.approve && raw.decision === 'deny')
      throw validationFailed([
        { path: 'grant.decision', message: 'cannot be deny on an approval' },
      ]);
    return this.decide(tenantId, row.id, raw, channel);
  }

  private async resolve(
    row: ConsentRequestEntity,
    input: DecisionInput,
    actor: string,
    channel: Exclude<ConsentChannel, 'system'>,
    now: number,
  ): Promise<{ request: ConsentRequestEntity; grant: ConsentGrantEntity | null }> {
    const expiry = grantExpiry(input, now);
    const grant: ConsentGrantEntity | null =
      expiry !== undefined && createsGrant(input.decision)
        ? {
            id: this.ids.prefixed('grant'),
            tenantId: row.tenantId,
            agentId: row.agentId,
            scope: row.scope,
            decision: input.decision,
            expiresAt: expiry,
            constraint: input.constraint ?? null,
            requestId: row.id,
            createdAt: now,
            revokedAt: null,
          }
        : null;
    const decided = await this.writeResolution(row, input, actor, channel, now, grant, true);
    if (grant)
      await this.approveCovered(row, grant, actor, channel, now).catch((e: unknown) =>
        this.logger.error(`grant ${grant.id}: the waiting requests it covers: ${String(e)}`),
      );
    return decided;
  }

  /**
   * A new grant answers the requests already waiting that it covers (the same agent and scope,
   * arguments within its constraint), as it would have had they come after it: a person who said yes for
   * the scope is not asked again, nor are the calls left to time out into denials.
   */
  private async approveCovered(
    decided: ConsentRequestEntity,
    grant: ConsentGrantEntity,
    actor: string,
    channel: Exclude<ConsentChannel, 'system'>,
    now: number,
  ): Promise<void> {
    const waiting = await this.repo.pendingFor(decided.tenantId, [decided.agentId]);
    for (const r of waiting) {
      if (r.id === decided.id || r.scope !== decided.scope || isExpired(r.expiresAt, now)) continue;
      const call = { agentId: r.agentId, scope: r.scope, arguments: r.arguments };
      if (!findCoveringGrant([toGrantView(grant)], call, now, this.constraints)) continue;
      const input: DecisionInput = { decision: grant.decision, reason: `covered by ${grant.id}` };
      // one decided meanwhile (another person, its timeout) keeps that answer; one not written stays
      // pending for a person: the decision made is answered as made either way
      await this.writeResolution(r, input, actor, channel, now, grant, false).catch(
        (e: unknown) => {
          if (!(e instanceof DomainError && e.code === 'ALREADY_RESOLVED'))
            this.logger.error(`grant ${grant.id} for request ${r.id}: ${String(e)}`);
        },
      );
    }
  }

  /** Stores one decision (and, when `created`, its new grant) with its audit rows and follow-ups. */
  private async writeResolution(
    row: ConsentRequestEntity,
    input: DecisionInput,
    actor: string,
    channel: Exclude<ConsentChannel, 'system'>,
    now: number,
    grant: ConsentGrantEntity | null,
    created: boolean,
  ): Promise<{ request: ConsentRequestEntity; grant: ConsentGrantEntity | null }> {
    const resolution: Resolution = {
      status: isApproval(input.decision) ? 'approved' : 'denied',
      decision: input.decision,
      decisionReason: input.reason ?? null,
      decidedBy: actor,
      channel,
      decidedAt: now,
      grantId: grant?.id ?? null,
    };
    const request = { ...row, ...resolution };
    const event = toResolved(request, 'decision');
    const maxGrants = this.config.consent.max_active_grants_per_agent;
    const written = await this.writes.run(async (em) => {
      // counted in the transaction that stores it; past the bound nothing is written: the request stays
      // pending (fails closed), for a decision that makes no grant or for after a revocation
      if (
        grant &&
        created &&
        (await this.repo.countActiveGrants(row.tenantId, row.agentId, now, em)) >= maxGrants
      )
        return GRANT_LIMIT;
      if (!(await this.repo.resolveIfPending(row.id, resolution, em))) return null;
      await this.repo.audit(
        {
          ...this.requestAudit('request.decided', row, actor, channel, now),
          decision: input.decision,
          reason: resolution.decisionReason,
          grantId: resolution.grantId,
        },
        em,
      );
      if (grant && created) {
        await this.repo.insertGrant(grant, em);
        await this.repo.audit(
          {
            ...this.requestAudit('grant.created', row, actor, channel, now),
            grantId: grant.id,
            decision: grant.decision,
          },
          em,
        );
      }
      return this.writeFollowUps(event, em);
    });
    if (written === GRANT_LIMIT)
      throw conflict(
        'GRANT_LIMIT',
        `an agent may have at most ${maxGrants} active grants (consent.max_active_grants_per_agent): revoke one, or decide without a grant; the request is still pending`,
        { max: maxGrants, request_id: row.id },
      );
    this.pendingById.delete(row.id);
    if (!written) throw alreadyResolved((await this.repo.findRequest(row.tenantId, row.id)) ?? row);
    this.rememberResolved(request);
    this.resolved(event, written);
    return { request, grant };
  }

  /** A denial by the system (timeout, cancellation); false when the request was already resolved. */
  private async resolveBySystem(
    row: ConsentRequestEntity,
    reason: string,
    cause: 'timeout' | 'cancelled',
    now: number,
  ): Promise<{ event: ConsentResolved; written: unknown[] } | null> {
    const resolution = systemDenial(reason, now);
    const audited: AuditEvent = cause === 'timeout' ? 'request.expired' : 'request.cancelled';
    const event = toResolved({ ...row, ...resolution }, cause);
    const written = await this.writes.run(async (em) => {
      if (!(await this.repo.resolveIfPending(row.id, resolution, em))) return null;
      await this.repo.audit(
        { ...this.requestAudit(audited, row, SYSTEM, 'system', now), decision: 'deny', reason },
        em,
      );
      // a cancellation's caller continues the batch itself; decision followers only hear of timeouts
      return cause === 'timeout' ? this.writeFollowUps(event, em) : [];
    });
    this.pendingById.delete(row.id);
    if (!written) return null;
    this.rememberResolved({ ...row, ...resolution });
    return { event, written };
  }

  private async expire(row: ConsentRequestEntity, now: number): Promise<void> {
    const r = await this.resolveBySystem(row, TIMEOUT_REASON, 'timeout', now);
    if (r) this.resolved(r.event, r.written);
  }

  /** Denies every pending request whose expiry has passed (the timer calls this; tests call it with a fake now). */
  expireDue(now = this.clock.now()): Promise<number> {
    // one sweep at a time: the timer and a test (or the boot) must not race each other
    const run = (this.sweeping ?? Promise.resolve(0)).then(async () => {
      let n = 0;
      for (;;) {
        const batch = dueForExpiry(await this.repo.pendingExpiredBy(now), now);
        for (const row of batch) {
          await this.expire(row, now);
          n++;
        }
        if (batch.length < 500) return n;
      }
    });
    this.sweeping = run.catch(() => 0);
    return run;
  }

  /**
   * Deletes grants revoked or expired more than `consent.grant_retention_days` ago (the audit keeps their
   * history); the number deleted. The timer calls this hourly; tests call it with a fake now.
   */
  async pruneGrants(now = this.clock.now()): Promise<number> {
    const before = now - this.config.consent.grant_retention_days * 86_400_000;
    let n = 0;
    for (;;) {
      const deleted = await this.repo.pruneGrants(before);
      n += deleted;
      if (deleted < 500) return n;
    }
  }

  // ------------------------------------------------------------ cancellation

  /**
   * A person's cancellation of a parked batch, racing its decisions: in one transaction every request of
   * these calls is denied (`cancelled`) and `claim` runs (it claims the parked run for the cancelling
   * continuation) — or, when a decision got to any of them first (or `claim` finds the run taken by an
   * in-band approval), nothing changes and the requests are answered as they now stand. Exactly one of a
   * decision and a cancel wins.
   */
  async cancelPending(
    tenantId: string,
    agentId: string,
    calls: CallRef[],
    reason: string,
    claim: (em: EntityManager) => Promise<boolean>,
  ): Promise<{ cancelled: true } | { cancelled: false; requests: ConsentRequestEntity[] }> {
    const rows = await this.requestsForCalls(tenantId, agentId, calls);
    if (rows.some((r) => r.status !== 'pending')) return { cancelled: false, requests: rows };
    const now = this.clock.now();
    const resolution = systemDenial(reason, now);
    const lost = new Error('a decision or a continuation came first');
    try {
      await this.writes.run(async (em) => {
        for (const row of rows) {
          if (!(await this.repo.resolveIfPending(row.id, resolution, em))) throw lost;
          await this.repo.audit(
            {
              ...this.requestAudit('request.cancelled', row, SYSTEM, 'system', now),
              decision: 'deny',
              reason,
            },
            em,
          );
        }
        if (!(await claim(em))) throw lost;
      });
    } catch (e) {
      if (e !== lost) throw e;
      return {
        cancelled: false,
        requests: await this.requestsForCalls(tenantId, agentId, calls),
      };
    }
    for (const row of rows) {
      this.pendingById.delete(row.id);
      this.announceCancelled(toResolved({ ...row, ...resolution }, 'cancelled'));
    }
    return { cancelled: true };
  }

  private announceCancelled(resolved: ConsentResolved): void {
    this.emit(this.cancelListeners, resolved);
    this.bus.publish('consent.resolved', resolved);
  }

  /** The requests of these calls (any status), in the order of the calls. */
  async requestsForCalls(
    tenantId: string,
    agentId: string,
    calls: CallRef[],
  ): Promise<ConsentRequestEntity[]> {
    const out: ConsentRequestEntity[] = [];
    for (const call of calls) {
      const row = await this.requestForCall(tenantId, agentId, call);
      if (row) out.push(row);
    }
    return out;
  }

  /**
   * Denies the pending requests of these calls (cancellation). Decision listeners are not told. (Only the
   * agent's parked batch has pending requests, so a tool_call_id names one of them.)
   */
  async denyPendingForCalls(
    tenantId: string,
    agentId: string,
    toolCallIds: string[],
    reason: string,
  ): Promise<number> {
    const rows = (await this.repo.pendingFor(tenantId, [agentId])).filter((r) =>
      toolCallIds.includes(r.toolCallId),
    );
    const now = this.clock.now();
    let n = 0;
    for (const row of rows) {
      const r = await this.resolveBySystem(row, reason, 'cancelled', now);
      if (r) {
        n++;
        this.announceCancelled(r.event);
      }
    }
    return n;
  }

  /**
   * Crash recovery: these calls were approved but their tools never started (no tool-call claim), so an
   * approval they used up is theirs again and the person is not asked twice. Audited `approval.restored`.
   */
  async restoreUnstartedApprovals(
    tenantId: string,
    agentId: string,
    calls: CallRef[],
  ): Promise<void> {
    const now = this.clock.now();
    for (const call of calls) {
      const row = await this.requestForCall(tenantId, agentId, call);
      if (!row) continue;
      this.resolvedById.delete(row.id);
      await this.writes.run(async (em) => {
        if (!(await this.repo.restoreApproval(row.id, em))) return;
        await this.repo.audit(
          {
            ...this.requestAudit('approval.restored', row, SYSTEM, 'system', now),
            decision: row.decision,
            reason: 'the server stopped before the approved call started',
          },
          em,
        );
      });
    }
  }

  // ------------------------------------------------------------ queries (REST, gateway, processing)

  /**
   * Which of these calls still wait for a decision (processing resumes a parked batch when none do). Only
   * the agent's parked batch has pending requests, so a tool_call_id names one of them.
   */
  async undecidedCalls(
    tenantId: string,
    agentId: string,
    toolCallIds: string[],
  ): Promise<string[]> {
    const waiting = new Set(
      (await this.repo.pendingFor(tenantId, [agentId])).map((r) => r.toolCallId),
    );
    return toolCallIds.filter((id) => waiting.has(id));
  }

  /** Pending requests of a tenant, for all agents (null) or some: redelivered on subscribe. */
  pendingFor(tenantId: string, agentIds: string[] | null): Promise<ConsentRequestEntity[]> {
    return this.repo.pendingFor(tenantId, agentIds);
  }

  listRequests(
    tenantId: string,
    status: 'pending' | 'resolved' | 'all',
    page: PageBounds,
    agentId?: string,
  ) {
    return this.repo.listRequests(tenantId, status, page, agentId);
  }

  async getRequest(tenantId: string, id: string): Promise<ConsentRequestEntity> {
    const row = await this.repo.findRequest(tenantId, id);
    if (!row) throw notFound('consent request', id);
    return row;
  }

  /** One page of an agent's grants; a cursor that is not one of them is 400 UNKNOWN_CURSOR. */
  async listGrants(
    tenantId: string,
    agentId: string,
    page: PageQuery,
  ): Promise<ConsentGrantEntity[]> {
    const cursor = async (id: string | undefined) => {
      if (id === undefined) return null;
      const found = isPrefixedId('grant', id) ? await this.repo.findGrant(tenantId, id) : null;
      if (found?.agentId !== agentId)
        throw badRequest(
          'UNKNOWN_CURSOR',
          `cursor ${JSON.stringify(id)} is not a grant of this agent`,
        );
      return found;
    };
    const cursors = { after: await cursor(page.after), before: await cursor(page.before) };
    return this.repo.grantsOfAgent(tenantId, agentId, page, cursors);
  }

  listTenantGrants(
    tenantId: string,
    opts: PageBounds & { agentId?: string },
  ): Promise<ConsentGrantEntity[]> {
    return this.repo.grantsOfTenant(tenantId, opts);
  }

  /** Revokes a grant; the next call it would have covered asks again. Revoking twice is harmless. */
  async revokeGrant(tenantId: string, grantId: string, channel: Exclude<ConsentChannel, 'system'>) {
    const grant = await this.repo.findGrant(tenantId, grantId);
    if (!grant) throw notFound('grant', grantId);
    if (grant.revokedAt !== null) return grant;
    const now = this.clock.now();
    await this.tx.run(async (em) => {
      if (!(await this.repo.revokeGrant(grantId, now, em))) return;
      await this.repo.audit(
        {
          tenantId,
          event: 'grant.revoked',
          agentId: grant.agentId,
          grantId,
          requestId: grant.requestId,
          scope: grant.scope,
          decision: grant.decision,
          actor: tenantId,
          channel,
          at: now,
        },
        em,
      );
    });
    return (await this.repo.findGrant(tenantId, grantId)) ?? grant;
  }

  listAudit(tenantId: string, opts: AuditQuery): Promise<ConsentAuditEntity[]> {
    return this.repo.listAudit(tenantId, opts);
  }

  // ------------------------------------------------------------ lifecycle

  /** Requests that expired while the server was down are denied now, after every listener registered. */
  async onApplicationBootstrap(): Promise<void> {
    const n = await this.expireDue();
    if (n > 0)
      this.logger.log(
        `${n} consent request(s) expired while the server was down: denied (timeout)`,
      );
    let prunedAt = 0;
    this.timer = setInterval(() => {
      this.expireDue().catch((e: unknown) =>
        this.logger.error(`consent expiry sweep: ${String(e)}`),
      );
      const now = this.clock.now();
      if (now - prunedAt < PRUNE_INTERVAL_MS) return;
      prunedAt = now;
      this.pruneGrants(now).catch((e: unknown) =>
        this.logger.error(`consent grant pruning: ${String(e)}`),
      );
    }, SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping;
  }

  // ------------------------------------------------------------ helpers

  /** A decision or expiry: this instance's listeners continue the batch; every instance's clients are told. */
  private resolved(event: ConsentResolved, written: unknown[]): void {
    this.decisionFollowers.forEach((f, i) => {
      try {
        f.after(event, written[i]);
      } catch (e) {
        this.logger.error(`consent listener: ${String(e)}`);
      }
    });
    this.emit(this.decisionListeners, event);
    this.bus.publish('consent.resolved', event);
  }

  /** The followers' writes in a decision's transaction, in their order. */
  private async writeFollowUps(event: ConsentResolved, em: EntityManager): Promise<unknown[]> {
    const written: unknown[] = [];
    for (const f of this.decisionFollowers) written.push(await f.write(event, em));
    return written;
  }

  private rememberResolved(row: ConsentRequestEntity): void {
    this.resolvedById.set(row.id, row);
  }

  private emit<T>(listeners: Listener<T>[], event: T): void {
    for (const l of listeners) {
      try {
        const r = l(event);
        if (r instanceof Promise)
          r.catch((e: unknown) => this.logger.error(`consent listener: ${String(e)}`));
      } catch (e) {
        this.logger.error(`consent listener: ${String(e)}`);
      }
    }
  }

  private callAudit(event: AuditEvent, req: ConsentCheckRequest, at: number) {
    return {
      tenantId: req.tenantId,
      event,
      agentId: req.agentId,
      runId: req.runId,
      toolCallId: req.toolCallId,
      toolName: req.toolName,
      scope: req.scope,
      actor: SYSTEM,
      channel: 'system' as const,
      at,
    };
  }

  private requestAudit(
    event: AuditEvent,
    row: ConsentRequestEntity,
    actor: string,
    channel: ConsentChannel,
    at: number,
  ) {
    return {
      tenantId: row.tenantId,
      event,
      agentId: row.agentId,
      requestId: row.id,
      runId: row.runId,
      toolCallId: row.toolCallId,
      toolName: row.toolName,
      scope: row.scope,
      actor,
      channel,
      at,
    };
  }
}

/** A denial by the system (timeout, cancellation). */
function systemDenial(reason: string, now: number): Resolution {
  return {
    status: 'denied',
    decision: 'deny',
    decisionReason: reason,
    decidedBy: SYSTEM,
    channel: 'system',
    decidedAt: now,
    grantId: null,
  };
}

function add<T>(list: T[], item: T): () => void {
  list.push(item);
  return () => {
    const i = list.indexOf(item);
    if (i >= 0) list.splice(i, 1);
  };
}

function toGrantView(g: ConsentGrantEntity): GrantView {
  return {
    id: g.id,
    agentId: g.agentId,
    scope: g.scope,
    decision: g.decision,
    expiresAt: g.expiresAt,
    constraint: g.constraint,
    revokedAt: g.revokedAt,
    createdAt: g.createdAt,
  };
}

function toResolved(r: ConsentRequestEntity, cause: ConsentResolved['cause']): ConsentResolved {
  return {
    tenantId: r.tenantId,
    agentId: r.agentId,
    runId: r.runId,
    batchId: r.batchId,
    requestId: r.id,
    toolCallId: r.toolCallId,
    toolName: r.toolName,
    decision: r.decision ?? 'deny',
    approve: r.status === 'approved',
    reason: r.decisionReason,
    decidedBy: r.decidedBy ?? SYSTEM,
    channel: r.channel ?? 'system',
    cause,
    grantId: r.grantId,
    createdAt: r.createdAt,
    decidedAt: r.decidedAt ?? 0,
  };
}

export function alreadyResolved(row: ConsentRequestEntity) {
  return conflict('ALREADY_RESOLVED', `consent request ${row.id} is already resolved`, {
    request_id: row.id,
    decision: row.decision,
    reason: row.decisionReason,
    decided_by: row.decidedBy,
  });
}
