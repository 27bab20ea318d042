import { Injectable } from '@nestjs/common';
import type { PageBounds } from '../common/list-page';
import { keysetPage } from '../database/keyset-page';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, In } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import type { MemoryBlock } from '../core/agents/agent-record';
import { storedBytes } from '../core/limits/stored-bytes';
import { containsSql, type SearchScan } from '../database/like-pattern';
import { ScanSlots } from '../database/scan-slots';
import { Transactor } from '../database/transactor';
import { TenantQuotas } from '../quotas/tenant-quotas';
import { AgentBlockEntity, BlockEntity } from './block.entity';

export interface BlockListQuery extends PageBounds {
  label: string | null;
  /** Letta's `label_search` / `value_search` / `description_search`: case-insensitive parts. */
  labelSearch: string | null;
  valueSearch: string | null;
  descriptionSearch: string | null;
  /** Letta's `tags` (whole tags) and `match_all_tags` (every one, else any). */
  tags: string[];
  matchAllTags: boolean;
  /** Letta's `show_hidden_blocks`: hidden blocks are left out unless it is true. */
  showHidden: boolean;
  order: 'asc' | 'desc';
}

export const toMemoryBlock = (b: BlockEntity): MemoryBlock => ({
  id: b.id,
  label: b.label,
  value: b.value,
  limit: b.limit,
  description: b.description,
  read_only: b.read_only,
  metadata: b.metadata,
  tags: b.tags ?? null,
  hidden: b.hidden ?? null,
});

/**
 * Memory blocks and their links to agents; every read is scoped to one tenant. Methods taking an
 * EntityManager run inside the caller's transaction (AgentsRepository writes an agent with its blocks).
 */
@Injectable()
export class BlocksRepository {
  private readonly changeListeners: ((agentId: string) => void)[] = [];

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly tx: Transactor,
    private readonly quotas: TenantQuotas,
    private readonly scans: ScanSlots,
  ) {}

  /** Each agent's blocks in its order. */
  async forAgents(em: EntityManager, agentIds: string[]): Promise<Map<string, MemoryBlock[]>> {
    const out = new Map<string, MemoryBlock[]>(agentIds.map((id) => [id, []]));
    if (agentIds.length === 0) return out;
    const links = await em.find(AgentBlockEntity, {
      where: { agent_id: In(agentIds) },
      order: { agent_id: 'ASC', position: 'ASC' },
    });
    const blocks = await this.byIds(em, [...new Set(links.map((l) => l.block_id))]);
    for (const l of links) {
      const b = blocks.get(l.block_id);
      if (b) out.get(l.agent_id)!.push(toMemoryBlock(b));
    }
    return out;
  }

  /**
   * Makes `blocks` the agent's blocks, in order: writes each block's row (a block shared with other
   * agents changes for them too), relinks, and (unless `keepUnlinked`: a detach) deletes the blocks
   * this left linked to no agent.
   * Answers every agent whose blocks this may have changed, how many blocks it created and how many
   * bytes the blocks it wrote grew by (`storedBytes`; the blocks it deleted not taken away).
   */
  async writeAgentBlocks(
    em: EntityManager,
    tenantId: string,
    agentId: string,
    blocks: MemoryBlock[],
    now: number,
    opts: { keepUnlinked: boolean; loaded: MemoryBlock[] | null },
  ): Promise<{ agents: string[]; added: number; addedBytes: number }> {
    const before = await em.find(AgentBlockEntity, { where: { agent_id: agentId } });
    const existing = await this.byIds(
      em,
      blocks.map((b) => b.id),
    );
    const loaded = new Map((opts.loaded ?? []).map((b) => [b.id, b]));
    let added = 0;
    let addedBytes = 0;
    for (const b of blocks) {
      const row = existing.get(b.id);
      // an existing block is written only when the caller changed it from what it read, so a
      // concurrent edit (another agent's tool, the block route) is not overwritten by a stale copy
      const was = loaded.get(b.id);
      if (row && (was === undefined || sameBlock(was, b))) continue;
      if (!row) added++;
      const written = {
        ...b,
        metadata: b.metadata ?? null,
        tags: b.tags?.length ? b.tags : null,
        tenant_id: tenantId,
        created_at: row?.created_at ?? now,
        updated_at: now,
      };
      addedBytes += storedBytes('blocks', written) - (row ? storedBytes('blocks', row) : 0);
      await em.save(BlockEntity, written);
    }
    await em.delete(AgentBlockEntity, { agent_id: agentId });
    if (blocks.length)
      await em.insert(
        AgentBlockEntity,
        blocks.map((b, position) => ({
          agent_id: agentId,
          block_id: b.id,
          tenant_id: tenantId,
          position,
        })),
      );
    const kept = new Set(blocks.map((b) => b.id));
    if (!opts.keepUnlinked)
      await this.deleteUnlinked(
        em,
        before.map((l) => l.block_id).filter((id) => !kept.has(id)),
      );
    return { agents: await this.agentsOf(em, [...kept]), added, addedBytes };
  }

  /** Unlinks the agent's blocks (the agent is deleted); blocks no other agent has are deleted. */
  async unlinkAgent(em: EntityManager, agentId: string): Promise<void> {
    const links = await em.find(AgentBlockEntity, { where: { agent_id: agentId } });
    await em.delete(AgentBlockEntity, { agent_id: agentId });
    await this.deleteUnlinked(
      em,
      links.map((l) => l.block_id),
    );
  }

  find(tenantId: string, id: string): Promise<BlockEntity | null> {
    return this.ds.getRepository(BlockEntity).findOneBy({ tenant_id: tenantId, id });
  }

  /** A page of the tenant's blocks by (created_at, id); `after`/`before` are blocks already looked up. */
  async list(
    tenantId: string,
    q: BlockListQuery,
    cursors: { after: BlockEntity | null; before: BlockEntity | null },
    scan: SearchScan,
  ): Promise<BlockEntity[]> {
    const qb = this.ds
      .getRepository(BlockEntity)
      .createQueryBuilder('b')
      .where('b.tenant_id = :tenantId', { tenantId });
    if (q.label !== null) qb.andWhere('b.label = :label', { label: q.label });
    // as Letta's list_blocks (NOT: a boolean on PostgreSQL, 0/1 on SQLite)
    if (!q.showHidden) qb.andWhere('(b.hidden IS NULL OR NOT b.hidden)');
    const search = { label: q.labelSearch, value: q.valueSearch, description: q.descriptionSearch };
    const searched = Object.entries(search).filter(([, text]) => text !== null);
    const scanned = searched.length > 0 || q.tags.length > 0;
    if (scanned) {
      // bounded scan (limits.search_scan_*): the tenant's newest blocks, the first characters of each
      const newest = this.ds
        .getRepository(BlockEntity)
        .createQueryBuilder('s')
        .select('s.id')
        .where('s.tenant_id = :tenantId', { tenantId });
      // the scan's scope is the page's: a label filter narrows it first
      if (q.label !== null) newest.andWhere('s.label = :label', { label: q.label });
      newest.orderBy('s.created_at', 'DESC').addOrderBy('s.id', 'DESC').limit(scan.rows);
      qb.andWhere(`b.id IN (${newest.getQuery()})`);
      for (const [col, text] of searched)
        qb.andWhere(containsSql(this.ds, `b.${col}`, `${col}Needle`, scan.chars), {
          [`${col}Needle`]: (text as string).toLowerCase(),
        });
      // a tag is matched whole: as an element of the stored JSON list (compact, as JSON.stringify writes
      // it), between commas once the brackets are commas too, so "y" inside ["x\"y"] is no match
      const find = this.ds.options.type === 'postgres' ? 'strpos' : 'instr';
      const elements = `',' || substr(b.tags, 2, length(b.tags) - 2) || ','`;
      const tagged = q.tags.map((_, i) => `${find}(${elements}, :tag${i}) > 0`);
      if (tagged.length)
        qb.andWhere(
          `(${tagged.join(q.matchAllTags ? ' AND ' : ' OR ')})`,
          Object.fromEntries(q.tags.map((tag, i) => [`tag${i}`, `,${JSON.stringify(tag)},`])),
        );
    }
    const page = () => keysetPage(qb, 'b', q, cursors);
    return scanned ? this.scans.run(tenantId, page) : page();
  }

  /** A standalone block, within the tenant's quotas (409 QUOTA_EXCEEDED, nothing written). */
  insert(block: BlockEntity): Promise<void> {
    return this.tx.run(async (em) => {
      await em.insert(BlockEntity, block as QueryDeepPartialEntity<BlockEntity>);
      await this.quotas.assertWithin(em, block.tenant_id, 'blocks');
      await this.quotas.assertBytesWithin(em, block.tenant_id, storedBytes('blocks', block));
    });
  }

  /** When each of these blocks of the tenant was made (a block not found is left out). */
  async createdAt(tenantId: string, ids: string[]): Promise<Map<string, number>> {
    if (ids.length === 0) return new Map();
    const rows = await this.ds.getRepository(BlockEntity).find({
      select: { id: true, created_at: true },
      where: { tenant_id: tenantId, id: In(ids) },
    });
    return new Map(rows.map((b) => [b.id, b.created_at]));
  }

  /** Each of these agents' blocks, outside any transaction. */
  blocksOfAgents(agentIds: string[]): Promise<Map<string, MemoryBlock[]>> {
    return this.forAgents(this.ds.manager, agentIds);
  }

  /**
   * Read-modify-write of one block in a transaction (the row locked on PostgreSQL, so concurrent edits
   * through different agents do not lose each other). `change` returns the changed fields or throws;
   * an edit that makes the block larger must fit `quotas.stored_bytes` (409 QUOTA_EXCEEDED, unchanged).
   * Null when the block is not the tenant's.
   */
  async modify(
    tenantId: string,
    id: string,
    change: (current: BlockEntity) => Partial<BlockEntity>,
  ): Promise<BlockEntity | null> {
    const done = await this.tx.run(async (em) => {
      const qb = em
        .getRepository(BlockEntity)
        .createQueryBuilder('b')
        .where('b.id = :id AND b.tenant_id = :tenantId', { id, tenantId });
      if (em.connection.options.type === 'postgres') qb.setLock('pessimistic_write');
      const current = await qb.getOne();
      if (!current) return null;
      const before = storedBytes('blocks', current);
      const block = Object.assign(current, change(current));
      await em.save(BlockEntity, block);
      await this.quotas.assertBytesWithin(em, tenantId, storedBytes('blocks', block) - before);
      return { block, agentIds: await this.agentsOf(em, [id]) };
    });
    if (done) this.notify(done.agentIds);
    return done?.block ?? null;
  }

  /** Deletes the block and its links; false when it is not the tenant's. */
  async remove(tenantId: string, id: string): Promise<boolean> {
    const agents = await this.tx.run(async (em) => {
      const r = await em.delete(BlockEntity, { tenant_id: tenantId, id });
      if (!r.affected) return null;
      const linked = await this.agentsOf(em, [id]);
      await em.delete(AgentBlockEntity, { block_id: id });
      return linked;
    });
    if (agents) this.notify(agents);
    return agents !== null;
  }

  /** Calls `fn` for every agent whose blocks a write here changed (the agents' record cache listens). */
  onChange(fn: (agentId: string) => void): void {
    this.changeListeners.push(fn);
  }

  private notify(agentIds: string[]): void {
    for (const id of agentIds) for (const fn of this.changeListeners) fn(id);
  }

  /** The agents a block is linked to. */
  agentsOfBlock(tenantId: string, id: string): Promise<string[]> {
    return this.ds
      .getRepository(AgentBlockEntity)
      .find({ where: { tenant_id: tenantId, block_id: id }, order: { agent_id: 'ASC' } })
      .then((links) => links.map((l) => l.agent_id));
  }

  private async agentsOf(em: EntityManager, blockIds: string[]): Promise<string[]> {
    if (blockIds.length === 0) return [];
    const links = await em.find(AgentBlockEntity, { where: { block_id: In(blockIds) } });
    return [...new Set(links.map((l) => l.agent_id))];
  }

  private async byIds(em: EntityManager, ids: string[]): Promise<Map<string, BlockEntity>> {
    if (ids.length === 0) return new Map();
    const rows = await em.find(BlockEntity, { where: { id: In(ids) } });
    return new Map(rows.map((b) => [b.id, b]));
  }

  private async deleteUnlinked(em: EntityManager, blockIds: string[]): Promise<void> {
    if (blockIds.length === 0) return;
    const stillLinked = new Set(
      (await em.find(AgentBlockEntity, { where: { block_id: In(blockIds) } })).map(
        (l) => l.block_id,
      ),
    );
    const orphans = blockIds.filter((id) => !stillLinked.has(id));
    if (orphans.length) await em.delete(BlockEntity, { id: In(orphans) });
  }
}

function sameBlock(row: MemoryBlock, b: MemoryBlock): boolean {
  return (
    row.label === b.label &&
    row.value === b.value &&
    row.limit === b.limit &&
    row.description === b.description &&
    row.read_only === b.read_only &&
    JSON.stringify(row.metadata ?? null) === JSON.stringify(b.metadata ?? null) &&
    JSON.stringify(row.tags ?? []) === JSON.stringify(b.tags ?? []) &&
    (row.hidden ?? null) === (b.hidden ?? null)
  );
}
