import { Injectable } from '@nestjs/common';
import { keysetPage } from '../database/keyset-page';
import { containsSql, includesSql } from '../database/like-pattern';
import { ScanSlots } from '../database/scan-slots';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, Repository } from 'typeorm';
import type { AgentSource, MemoryBlock } from '../core/agents/agent-record';
import type { ListAgentsQuery } from '../core/agents/list-agents-query';
import { storedBytes } from '../core/limits/stored-bytes';
import { GroupCommit } from '../database/group-commit';
import { updateWhere } from '../database/raw-writes';
import { Transactor } from '../database/transactor';
import { AgentIdentityEntity, IdentityEntity } from '../identities/identity.entity';
import { TenantQuotas } from '../quotas/tenant-quotas';
import { AgentEntity, AgentTagEntity } from './agent.entity';
import { BlocksRepository } from './blocks.repository';

/** The longest agent name or tag (validate-agent): a contains filter reads them whole. */
const TEXT_MAX = 200;

/** Agents with their tag index and memory blocks; every read is scoped to one tenant. */
@Injectable()
export class AgentsRepository {
  private readonly changeListeners: ((agentId: string) => void)[] = [];
  private readonly loaded = new WeakMap<AgentEntity, MemoryBlock[]>();

  constructor(
    @InjectRepository(AgentEntity) private readonly agents: Repository<AgentEntity>,
    private readonly tx: Transactor,
    private readonly writes: GroupCommit,
    private readonly blocks: BlocksRepository,
    private readonly quotas: TenantQuotas,
    private readonly scans: ScanSlots,
  ) {}

  async findForTenant(tenantId: string, id: string): Promise<AgentEntity | null> {
    return this.withBlocks(
      this.agents.manager,
      await this.agents.findOne({ where: { tenant_id: tenantId, id } }),
    );
  }

  /** The tenant's distinct agent tags by name (Letta's `GET /v1/tags/`); `after` is relative to the order. */
  async listTags(
    tenantId: string,
    q: { text?: string; after?: string; limit: number; order: 'asc' | 'desc' },
  ): Promise<string[]> {
    const qb = this.agents.manager
      .getRepository(AgentTagEntity)
      .createQueryBuilder('t')
      .select('DISTINCT t.tag', 'tag')
      .where('t.tenant_id = :tenantId', { tenantId });
    // instr, not LIKE '%…%', which backtracks: 200,000 tags of 200 a's and a needle of 199 a's and a b
    // held the server 3.5 s (the tags of 10,000 agents, 19 s); a text search reads every tag of the
    // tenant, so it takes a scan slot
    if (q.text)
      qb.andWhere(containsSql(this.agents.manager.connection, 't.tag', 'needle', TEXT_MAX), {
        needle: q.text.toLowerCase(),
      });
    if (q.after) qb.andWhere(`t.tag ${q.order === 'asc' ? '>' : '<'} :after`, { after: q.after });
    const read = () =>
      qb
        .orderBy('t.tag', q.order === 'asc' ? 'ASC' : 'DESC')
        .limit(q.limit)
        .getRawMany<{ tag: string }>();
    const rows = await (q.text ? this.scans.run(tenantId, read) : read());
    return rows.map((r) => r.tag);
  }

  /**
   * The tenant's agents that have a tool of this name: the quoted name in the JSON text narrows (instr, not
   * a LIKE '%…%', which backtracks), the parsed list decides. It reads every agent's tool list of the
   * tenant, so it takes a scan slot.
   */
  async usingTool(tenantId: string, toolName: string): Promise<AgentEntity[]> {
    const qb = this.agents
      .createQueryBuilder('a')
      .where('a.tenant_id = :tenantId', { tenantId })
      .andWhere(includesSql(this.agents.manager.connection, 'a.tools', 'quoted'), {
        quoted: JSON.stringify(toolName),
      });
    const rows = await this.scans.run(tenantId, () => qb.getMany());
    return rows.filter((a) => a.tools.includes(toolName));
  }

  /** Which of these ids are agents of the tenant. */
  async existing(tenantId: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.agents.find({
      where: { tenant_id: tenantId, id: In(ids) },
      select: { id: true },
    });
    return new Set(rows.map((r) => r.id));
  }

  /** The oldest agent of this name and origin (a file's agent is the only one: idx_agents_file_name). */
  async findOldestByName(
    tenantId: string,
    name: string,
    source: AgentSource,
  ): Promise<AgentEntity | null> {
    const agent = await this.agents.findOne({
      where: { tenant_id: tenantId, name, source },
      order: { created_at: 'ASC', id: 'ASC' },
    });
    return this.withBlocks(this.agents.manager, agent);
  }

  /** The newest created_at in a tenant (keeps creation order strict within one millisecond). */
  async latestCreatedAt(tenantId: string): Promise<number | null> {
    const row = await this.agents.findOne({
      where: { tenant_id: tenantId },
      order: { created_at: 'DESC' },
      select: { created_at: true, id: true },
    });
    return row?.created_at ?? null;
  }

  /**
   * Inserts or updates an agent and rewrites its tag rows and its blocks, in one transaction. Every
   * agent that shares one of its blocks is told of the change too. A new agent and new blocks, and a
   * write that makes the agent and its blocks larger, must fit the tenant's quotas (409 QUOTA_EXCEEDED,
   * nothing written), unless the operator writes (`operator`: config/agents, counted all the same).
   */
  async save(
    agent: AgentEntity,
    opts: { keepUnlinkedBlocks?: boolean; operator?: boolean } = {},
  ): Promise<AgentEntity> {
    const touched: string[] = [];
    return this.notifying(
      agent.id,
      this.tx.run(async (em) => {
        const { blocks } = agent;
        const stored = await em.findOneBy(AgentEntity, { id: agent.id });
        const created = stored === null;
        const saved = await em.save(AgentEntity, agent);
        await this.writeTags(em, agent);
        const written = await this.blocks.writeAgentBlocks(
          em,
          agent.tenant_id,
          agent.id,
          blocks,
          agent.updated_at,
          {
            keepUnlinked: opts.keepUnlinkedBlocks === true,
            loaded: this.loaded.get(agent) ?? null,
          },
        );
        touched.push(...written.agents);
        if (!opts.operator) {
          await this.quotas.assertWithin(em, agent.tenant_id, 'agents', created ? 1 : 0);
          await this.quotas.assertWithin(em, agent.tenant_id, 'blocks', written.added);
          const grown = storedBytes('agents', agent) - (stored ? storedBytes('agents', stored) : 0);
          await this.quotas.assertBytesWithin(em, agent.tenant_id, grown + written.addedBytes);
        }
        this.setBlocks(saved, blocks);
        return saved;
      }),
      touched,
    );
  }

  /** Read-modify-write of one agent's row in a transaction (rule and tool toggles; not its blocks). */
  modify<T>(
    tenantId: string,
    id: string,
    change: (agent: AgentEntity) => T,
  ): Promise<{ agent: AgentEntity; result: T } | null> {
    return this.notifying(
      id,
      this.tx.run(async (em) => {
        const agent = await this.withBlocks(
          em,
          await em.findOne(AgentEntity, { where: { tenant_id: tenantId, id } }),
        );
        if (!agent) return null;
        const result = change(agent);
        await em.save(AgentEntity, agent);
        return { agent, result };
      }),
    );
  }

  async setLastStopReason(
    tenantId: string,
    id: string,
    run: Pick<AgentEntity, 'last_stop_reason' | 'last_run_completion' | 'last_run_duration_ms'>,
    at: number,
  ): Promise<boolean> {
    // in the group commit: the run's end is written in the same transaction
    const changed = await this.writes.run((em) =>
      updateWhere(em, AgentEntity, { tenant_id: tenantId, id }, { ...run, updated_at: at }),
    );
    return changed > 0;
  }

  remove(tenantId: string, id: string): Promise<boolean> {
    return this.notifying(
      id,
      this.tx.run(async (em) => {
        const r = await em.delete(AgentEntity, { tenant_id: tenantId, id });
        await em.delete(AgentTagEntity, { agent_id: id });
        await this.blocks.unlinkAgent(em, id);
        return (r.affected ?? 0) > 0;
      }),
    );
  }

  /** Calls `fn` after every write of an agent's row (a cache of records derived from it listens). */
  onChange(fn: (agentId: string) => void): void {
    this.changeListeners.push(fn);
  }

  /** Tells the listeners of `agentId` and of every agent in `others` (filled while writing). */
  private async notifying<T>(
    agentId: string,
    write: Promise<T>,
    others: string[] = [],
  ): Promise<T> {
    try {
      return await write;
    } finally {
      for (const id of new Set([agentId, ...others])) for (const fn of this.changeListeners) fn(id);
    }
  }

  private async withBlocks(
    em: EntityManager,
    agent: AgentEntity | null,
  ): Promise<AgentEntity | null> {
    if (agent) this.setBlocks(agent, (await this.blocks.forAgents(em, [agent.id])).get(agent.id)!);
    return agent;
  }

  /** The agent's blocks as read, kept beside it: a save writes only the blocks changed since. */
  private setBlocks(agent: AgentEntity, blocks: MemoryBlock[]): void {
    agent.blocks = blocks;
    this.loaded.set(agent, blocks);
  }

  /** One page of a tenant's agents, ordered by (created_at, id); cursors are agents already looked up. */
  async list(
    tenantId: string,
    q: ListAgentsQuery,
    cursors: { after: AgentEntity | null; before: AgentEntity | null },
  ): Promise<AgentEntity[]> {
    if (q.matchesNone) return [];
    const qb = this.agents.createQueryBuilder('a').where('a.tenant_id = :tenantId', { tenantId });
    if (q.name !== null) qb.andWhere('a.name = :name', { name: q.name });
    // Letta's hidden agents are listed only when asked for (NOT: a boolean on PostgreSQL, 0/1 on SQLite)
    if (!q.showHidden) qb.andWhere('(a.hidden IS NULL OR NOT a.hidden)');
    if (q.lastStopReason !== null)
      qb.andWhere('a.last_stop_reason = :lastStopReason', { lastStopReason: q.lastStopReason });
    if (q.queryText !== null)
      qb.andWhere(containsSql(this.agents.manager.connection, 'a.name', 'needle', TEXT_MAX), {
        needle: q.queryText.toLowerCase(),
      });
    if (q.tags.length) {
      // Built with the query builder so the table name carries the schema on PostgreSQL.
      const sub = qb
        .subQuery()
        .select('t.agent_id')
        .from(AgentTagEntity, 't')
        .where('t.tenant_id = :tenantId')
        .andWhere('t.tag IN (:...tags)');
      if (q.matchAllTags) sub.groupBy('t.agent_id').having('COUNT(DISTINCT t.tag) = :tagCount');
      qb.andWhere(`a.id IN ${sub.getQuery()}`, {
        tags: [...new Set(q.tags)],
        tagCount: new Set(q.tags).size,
      });
    }
    // the identities feature's link table, read here as the tag index is: a join, not a list of ids
    if (q.identityId !== null || q.identifierKeys.length) {
      const sub = qb.subQuery().select('l.agent_id').from(AgentIdentityEntity, 'l');
      sub.where('l.tenant_id = :tenantId');
      if (q.identityId !== null) sub.andWhere('l.identity_id = :identityId');
      if (q.identifierKeys.length)
        sub.andWhere(
          `l.identity_id IN ${qb
            .subQuery()
            .select('i.id')
            .from(IdentityEntity, 'i')
            .where('i.tenant_id = :tenantId')
            .andWhere('i.identifier_key IN (:...identifierKeys)')
            .getQuery()}`,
        );
      qb.andWhere(`a.id IN ${sub.getQuery()}`, {
        identityId: q.identityId,
        identifierKeys: [...new Set(q.identifierKeys)],
      });
    }
    // an agent is weighed against the page's bytes with its blocks
    return keysetPage(qb, 'a', q, cursors, async (rows) => {
      const blocks = await this.blocks.forAgents(
        this.agents.manager,
        rows.map((a) => a.id),
      );
      for (const a of rows) this.setBlocks(a, blocks.get(a.id)!);
    });
  }

  private async writeTags(em: EntityManager, agent: AgentEntity): Promise<void> {
    await em.delete(AgentTagEntity, { agent_id: agent.id });
    const tags = [...new Set(agent.tags)];
    if (tags.length)
      await em.insert(
        AgentTagEntity,
        tags.map((tag) => ({ agent_id: agent.id, tag, tenant_id: agent.tenant_id })),
      );
  }
}
