import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, In } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import type { PageBounds } from '../common/list-page';
import type { ConsentChannel, ConsentDecision } from '../core/permissions/consent-decision';
import { keysetPage, readWithin } from '../database/keyset-page';
import { insertRows, updateWhere } from '../database/raw-writes';
import {
  AuditEvent,
  ConsentAuditEntity,
  ConsentGrantEntity,
  ConsentRequestEntity,
  ConsentStatus,
} from './consent.entities';

/** The audit columns an entry may leave out (stored as null). */
type OptionalAuditField =
  'requestId' | 'grantId' | 'runId' | 'toolCallId' | 'toolName' | 'scope' | 'decision' | 'reason';

export type AuditEntry = Omit<ConsentAuditEntity, 'id' | OptionalAuditField> &
  Partial<Pick<ConsentAuditEntity, OptionalAuditField>> & { event: AuditEvent };

export interface Resolution {
  status: Exclude<ConsentStatus, 'pending'>;
  decision: ConsentDecision;
  decisionReason: string | null;
  decidedBy: string;
  channel: ConsentChannel;
  decidedAt: number;
  grantId: string | null;
}

/** Every read and write of the consent tables, named for what the broker means by it. */
@Injectable()
export class ConsentRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  private m(em?: EntityManager): EntityManager {
    return em ?? this.ds.manager;
  }

  /** The newest request of a tool_call_id (an id a provider reused has one per call). */
  findRequestForCall(tenantId: string, agentId: string, toolCallId: string, em?: EntityManager) {
    return this.m(em).findOne(ConsentRequestEntity, {
      where: { tenantId, agentId, toolCallId },
      order: { createdAt: 'DESC', id: 'DESC' },
    });
  }

  findRequest(tenantId: string, id: string, em?: EntityManager) {
    return this.m(em).findOneBy(ConsentRequestEntity, { tenantId, id });
  }

  async insertRequest(row: ConsentRequestEntity, em: EntityManager): Promise<void> {
    await em.insert(ConsentRequestEntity, row as QueryDeepPartialEntity<ConsentRequestEntity>);
  }

  /** First decision wins: only a row still pending changes; false when another decision got there first. */
  async resolveIfPending(id: string, r: Resolution, em: EntityManager): Promise<boolean> {
    return (await updateWhere(em, ConsentRequestEntity, { id, status: 'pending' }, { ...r })) === 1;
  }

  /** An approval runs its call once: only the first consumer wins. */
  async consumeApproval(id: string, at: number, em: EntityManager): Promise<boolean> {
    const where = { id, status: 'approved', consumedAt: null };
    return (await updateWhere(em, ConsentRequestEntity, where, { consumedAt: at })) === 1;
  }

  countPending(tenantId: string, agentId: string, em: EntityManager): Promise<number> {
    return em.countBy(ConsentRequestEntity, { tenantId, agentId, status: 'pending' });
  }

  /** Gives back an approval whose call never started (recovery); false when there was nothing to give back. */
  async restoreApproval(id: string, em: EntityManager): Promise<boolean> {
    const res = await em
      .createQueryBuilder()
      .update(ConsentRequestEntity)
      .set({ consumedAt: null })
      .where('id = :id AND status = :approved AND consumed_at IS NOT NULL', {
        id,
        approved: 'approved',
      })
      .execute();
    return (res.affected ?? 0) === 1;
  }

  /** A tenant's requests (or one agent's), oldest first. */
  listRequests(
    tenantId: string,
    status: 'pending' | 'resolved' | 'all',
    page: PageBounds,
    agentId?: string,
  ) {
    const qb = this.ds.manager
      .createQueryBuilder(ConsentRequestEntity, 'r')
      .where('r.tenant_id = :tenantId', { tenantId });
    if (agentId !== undefined) qb.andWhere('r.agent_id = :agentId', { agentId });
    if (status !== 'all')
      qb.andWhere('r.status IN (:...statuses)', {
        statuses: status === 'pending' ? ['pending'] : ['approved', 'denied'],
      });
    return readWithin(qb.orderBy('r.created_at', 'ASC').addOrderBy('r.id', 'ASC'), 'r', page);
  }

  /** Pending requests of a tenant (optionally some agents), oldest first: redelivered on subscribe. */
  pendingFor(tenantId: string, agentIds: string[] | null) {
    return this.ds.manager.find(ConsentRequestEntity, {
      where: agentIds
        ? { tenantId, status: 'pending', agentId: In(agentIds) }
        : { tenantId, status: 'pending' },
      order: { createdAt: 'ASC', id: 'ASC' },
    });
  }

  /** Pending requests whose time is up, across tenants (the expiry sweep). */
  pendingExpiredBy(now: number, limit = 500) {
    return this.ds.manager
      .createQueryBuilder(ConsentRequestEntity, 'r')
      .where('r.status = :pending AND r.expires_at <= :now', { pending: 'pending', now })
      .orderBy('r.expires_at', 'ASC')
      .take(limit)
      .getMany();
  }

  /**
   * Grants that may still cover (tenant, agent, scope): unrevoked and unexpired, so expired ones are never
   * loaded (1,743 of them made each check take 0.5 s); the constraint is checked by the core.
   */
  candidateGrants(tenantId: string, agentId: string, scope: string, now: number) {
    return this.activeGrants(this.ds.manager, tenantId, agentId, now)
      .andWhere('g.scope = :scope', { scope })
      .getMany();
  }

  /** What `consent.max_active_grants_per_agent` counts: the agent's unrevoked, unexpired grants. */
  /**
   * The agent's active grants, counted for a bound. On PostgreSQL grant creations of one agent are first
   * serialised (a transaction-scoped advisory lock): under READ COMMITTED two instances deciding at once
   * would each count the grants before the other's, and both pass the bound. SQLite has one writer.
   */
  async countActiveGrants(tenantId: string, agentId: string, now: number, em: EntityManager) {
    if (em.connection.options.type === 'postgres')
      await em.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`grants:${agentId}`]);
    return this.activeGrants(em, tenantId, agentId, now).getCount();
  }

  private activeGrants(em: EntityManager, tenantId: string, agentId: string, now: number) {
    return em
      .createQueryBuilder(ConsentGrantEntity, 'g')
      .where('g.tenant_id = :tenantId AND g.agent_id = :agentId AND g.revoked_at IS NULL', {
        tenantId,
        agentId,
      })
      .andWhere('(g.expires_at IS NULL OR g.expires_at > :now)', { now });
  }

  /**
   * Deletes up to `limit` grants revoked or expired before `before` (their audit rows stay); the number
   * deleted. Expired grants cover nothing, and each one slowed the agent's consent checks and grant list.
   */
  async pruneGrants(before: number, limit = 500): Promise<number> {
    const ids = await this.ds.manager
      .createQueryBuilder(ConsentGrantEntity, 'g')
      .select('g.id', 'id')
      .where('g.revoked_at < :before OR g.expires_at < :before', { before })
      .limit(limit)
      .getRawMany<{ id: string }>();
    if (ids.length === 0) return 0;
    await this.ds.manager.delete(ConsentGrantEntity, { id: In(ids.map((r) => r.id)) });
    return ids.length;
  }

  async insertGrant(row: ConsentGrantEntity, em: EntityManager): Promise<void> {
    await em.insert(ConsentGrantEntity, row as QueryDeepPartialEntity<ConsentGrantEntity>);
  }

  findGrant(tenantId: string, id: string, em?: EntityManager) {
    return this.m(em).findOneBy(ConsentGrantEntity, { tenantId, id });
  }

  /** One page of an agent's grants, ordered by (created_at, id); cursors are grants already looked up. */
  grantsOfAgent(
    tenantId: string,
    agentId: string,
    page: PageBounds & { order: 'asc' | 'desc' },
    cursors: { after: ConsentGrantEntity | null; before: ConsentGrantEntity | null },
  ) {
    const qb = this.ds.manager
      .createQueryBuilder(ConsentGrantEntity, 'g')
      .where('g.tenant_id = :tenantId AND g.agent_id = :agentId', { tenantId, agentId });
    const key = (g: ConsentGrantEntity | null) => g && { id: g.id, created_at: g.createdAt };
    const keys = { after: key(cursors.after), before: key(cursors.before) };
    return keysetPage(qb, 'g', page, keys);
  }

  grantsOfTenant(tenantId: string, opts: PageBounds & { agentId?: string }) {
    const qb = this.ds.manager
      .createQueryBuilder(ConsentGrantEntity, 'g')
      .where('g.tenant_id = :tenantId', { tenantId });
    if (opts.agentId) qb.andWhere('g.agent_id = :agentId', { agentId: opts.agentId });
    return readWithin(qb.orderBy('g.created_at', 'DESC').addOrderBy('g.id', 'ASC'), 'g', opts);
  }

  async revokeGrant(id: string, at: number, em: EntityManager): Promise<boolean> {
    const res = await em
      .createQueryBuilder()
      .update(ConsentGrantEntity)
      .set({ revokedAt: at })
      .where('id = :id AND revoked_at IS NULL', { id })
      .execute();
    return (res.affected ?? 0) === 1;
  }

  /** A plain bound INSERT (two per decision: the query builder's was a visible share of a resumption). */
  async audit(entry: AuditEntry, em?: EntityManager): Promise<void> {
    await insertRows(this.m(em), ConsentAuditEntity, [
      {
        requestId: null,
        grantId: null,
        runId: null,
        toolCallId: null,
        toolName: null,
        scope: null,
        decision: null,
        reason: null,
        ...entry,
      },
    ]);
  }

  listAudit(tenantId: string, opts: AuditQuery) {
    const qb = this.ds.manager
      .createQueryBuilder(ConsentAuditEntity, 'a')
      .where('a.tenant_id = :tenantId', { tenantId });
    if (opts.agentId) qb.andWhere('a.agent_id = :agentId', { agentId: opts.agentId });
    if (opts.requestId) qb.andWhere('a.request_id = :requestId', { requestId: opts.requestId });
    if (opts.toolName) qb.andWhere('a.tool_name = :toolName', { toolName: opts.toolName });
    if (opts.decision) qb.andWhere('a.decision = :decision', { decision: opts.decision });
    if (opts.channel) qb.andWhere('a.channel = :channel', { channel: opts.channel });
    if (opts.since !== undefined) qb.andWhere('a.at >= :since', { since: opts.since });
    if (opts.until !== undefined) qb.andWhere('a.at <= :until', { until: opts.until });
    if (opts.after !== undefined) qb.andWhere('a.id > :after', { after: opts.after });
    if (opts.before !== undefined) qb.andWhere('a.id < :before', { before: opts.before });
    return readWithin(qb.orderBy('a.id', opts.newestFirst ? 'DESC' : 'ASC'), 'a', opts);
  }
}

/** The audit log's filters (all optional) and page: oldest first unless `newestFirst`. */
export interface AuditQuery extends PageBounds {
  agentId?: string;
  requestId?: string;
  toolName?: string;
  decision?: string;
  channel?: string;
  /** Epoch ms bounds on `at`, inclusive. */
  since?: number;
  until?: number;
  newestFirst?: boolean;
  after?: number;
  before?: number;
}
