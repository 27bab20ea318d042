import { Injectable } from '@nestjs/common';
import type { PageBounds } from '../common/list-page';
import { keysetPage } from '../database/keyset-page';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { Transactor } from '../database/transactor';
import { TenantQuotas } from '../quotas/tenant-quotas';
import { answeringConflicts, isUniqueViolation } from '../database/unique-violation';
import { AgentIdentityEntity, IdentityEntity } from './identity.entity';

export interface ListIdentitiesQuery extends PageBounds {
  name: string | null;
  identifierKey: string | null;
  identityType: string | null;
  order: 'asc' | 'desc';
}

/** Identities and their agent links; every read is scoped to one tenant. */
@Injectable()
export class IdentitiesRepository {
  constructor(
    @InjectRepository(IdentityEntity) private readonly repo: Repository<IdentityEntity>,
    @InjectRepository(AgentIdentityEntity) private readonly links: Repository<AgentIdentityEntity>,
    private readonly tx: Transactor,
    private readonly quotas: TenantQuotas,
  ) {}

  findForTenant(tenantId: string, id: string): Promise<IdentityEntity | null> {
    return this.repo.findOne({ where: { tenant_id: tenantId, id } });
  }

  findByKey(tenantId: string, identifierKey: string): Promise<IdentityEntity | null> {
    return this.repo.findOne({ where: { tenant_id: tenantId, identifier_key: identifierKey } });
  }

  findManyForTenant(tenantId: string, ids: string[]): Promise<IdentityEntity[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.repo.find({ where: { tenant_id: tenantId, id: In(ids) } });
  }

  count(tenantId: string): Promise<number> {
    return this.repo.count({ where: { tenant_id: tenantId } });
  }

  /** One page, ordered by (created_at, id); `after` / `before` are identities already looked up. */
  async list(
    tenantId: string,
    q: ListIdentitiesQuery,
    cursors: { after: IdentityEntity | null; before: IdentityEntity | null },
  ): Promise<IdentityEntity[]> {
    const qb = this.repo.createQueryBuilder('i').where('i.tenant_id = :tenantId', { tenantId });
    if (q.name !== null) qb.andWhere('i.name = :name', { name: q.name });
    if (q.identifierKey !== null) qb.andWhere('i.identifier_key = :key', { key: q.identifierKey });
    if (q.identityType !== null) qb.andWhere('i.identity_type = :type', { type: q.identityType });
    return keysetPage(qb, 'i', q, cursors);
  }

  /**
   * False when the tenant already has an identity with that identifier_key (the unique index decides).
   * Within the tenant's quota (409 QUOTA_EXCEEDED, nothing written).
   */
  async insert(row: IdentityEntity, agentIds: string[]): Promise<boolean> {
    try {
      await answeringConflicts(() =>
        this.tx.run(async (em) => {
          await em.insert(IdentityEntity, row as QueryDeepPartialEntity<IdentityEntity>);
          await this.quotas.assertWithin(em, row.tenant_id, 'identities');
          await this.replaceAgents(em.getRepository(AgentIdentityEntity), row, agentIds);
        }),
      );
      return true;
    } catch (e) {
      if (isUniqueViolation(e)) return false;
      throw e;
    }
  }

  /** Saves the identity and, when given, replaces its agents; false on a taken identifier_key. */
  async save(row: IdentityEntity, agentIds: string[] | undefined): Promise<boolean> {
    try {
      await answeringConflicts(() =>
        this.tx.run(async (em) => {
          await em.save(IdentityEntity, row);
          if (agentIds)
            await this.replaceAgents(em.getRepository(AgentIdentityEntity), row, agentIds);
        }),
      );
      return true;
    } catch (e) {
      if (isUniqueViolation(e)) return false;
      throw e;
    }
  }

  /**
   * Changes the identity under a row lock (two updates merging properties keep each other's) and adds
   * the agents it does not have yet. Null when it is not the tenant's; false on a taken identifier_key.
   */
  async modify(
    tenantId: string,
    id: string,
    change: (current: IdentityEntity) => void,
    addAgentIds: string[],
  ): Promise<boolean | null> {
    try {
      return await answeringConflicts(() =>
        this.tx.run(async (em) => {
          const qb = em
            .getRepository(IdentityEntity)
            .createQueryBuilder('i')
            .where('i.id = :id AND i.tenant_id = :tenantId', { id, tenantId });
          if (em.connection.options.type === 'postgres') qb.setLock('pessimistic_write');
          const current = await qb.getOne();
          if (!current) return null;
          change(current);
          await em.save(IdentityEntity, current);
          if (addAgentIds.length)
            // a link made meanwhile by an agent's attach is kept, not a conflict
            await em
              .createQueryBuilder()
              .insert()
              .into(AgentIdentityEntity)
              .values(
                addAgentIds.map((agent_id) => ({ agent_id, identity_id: id, tenant_id: tenantId })),
              )
              .orIgnore()
              .execute();
          return true;
        }),
      );
    } catch (e) {
      if (isUniqueViolation(e)) return false;
      throw e;
    }
  }

  async remove(tenantId: string, id: string): Promise<boolean> {
    return this.tx.run(async (em) => {
      const r = await em.delete(IdentityEntity, { tenant_id: tenantId, id });
      await em.delete(AgentIdentityEntity, { tenant_id: tenantId, identity_id: id });
      return (r.affected ?? 0) > 0;
    });
  }

  /** Agent id → its identity ids, for these agents of the tenant. */
  async identityIdsOf(tenantId: string, agentIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (agentIds.length === 0) return out;
    const rows = await this.links.find({ where: { tenant_id: tenantId, agent_id: In(agentIds) } });
    for (const r of rows) out.set(r.agent_id, [...(out.get(r.agent_id) ?? []), r.identity_id]);
    return out;
  }

  /** Identity id → its agent ids. */
  async agentIdsOf(tenantId: string, identityIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (identityIds.length === 0) return out;
    const rows = await this.links.find({
      where: { tenant_id: tenantId, identity_id: In(identityIds) },
    });
    for (const r of rows) out.set(r.identity_id, [...(out.get(r.identity_id) ?? []), r.agent_id]);
    return out;
  }

  /** Makes the agent's identities exactly these. */
  async setForAgent(tenantId: string, agentId: string, identityIds: string[]): Promise<void> {
    await this.tx.run(async (em) => {
      await em.delete(AgentIdentityEntity, { tenant_id: tenantId, agent_id: agentId });
      if (identityIds.length)
        await em.insert(
          AgentIdentityEntity,
          identityIds.map((identity_id) => ({
            agent_id: agentId,
            identity_id,
            tenant_id: tenantId,
          })),
        );
    });
  }

  /** Links one agent and one identity; false when they already were. */
  async link(tenantId: string, agentId: string, identityId: string): Promise<boolean> {
    try {
      await answeringConflicts(() =>
        this.links.insert({ agent_id: agentId, identity_id: identityId, tenant_id: tenantId }),
      );
      return true;
    } catch (e) {
      if (isUniqueViolation(e)) return false;
      throw e;
    }
  }

  async unlink(tenantId: string, agentId: string, identityId: string): Promise<void> {
    await this.links.delete({ tenant_id: tenantId, agent_id: agentId, identity_id: identityId });
  }

  countForAgent(tenantId: string, agentId: string): Promise<number> {
    return this.links.count({ where: { tenant_id: tenantId, agent_id: agentId } });
  }

  /** The agent is gone: its links go too. */
  async removeAgent(tenantId: string, agentId: string): Promise<void> {
    await this.links.delete({ tenant_id: tenantId, agent_id: agentId });
  }

  private async replaceAgents(
    links: Repository<AgentIdentityEntity>,
    row: IdentityEntity,
    agentIds: string[],
  ): Promise<void> {
    await links.delete({ tenant_id: row.tenant_id, identity_id: row.id });
    if (agentIds.length)
      await links.insert(
        agentIds.map((agent_id) => ({ agent_id, identity_id: row.id, tenant_id: row.tenant_id })),
      );
  }
}
