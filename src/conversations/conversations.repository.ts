import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { PageBounds } from '../common/list-page';
import { readWithin } from '../database/keyset-page';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { containsSql } from '../database/like-pattern';
import { ScanSlots } from '../database/scan-slots';
import { Transactor } from '../database/transactor';
import { TenantQuotas } from '../quotas/tenant-quotas';
import { ConversationEntity } from './conversation.entity';

export interface ConversationPage extends PageBounds {
  agentId?: string;
  archived: 'unarchived' | 'archived' | 'all';
  after?: string;
  order: 'asc' | 'desc';
  /** Letta's `summary_search`: a case-insensitive part of the summary. */
  summarySearch?: string;
}

/** Conversations' rows. */
@Injectable()
export class ConversationsRepository {
  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly tx: Transactor,
    private readonly quotas: TenantQuotas,
    private readonly scans: ScanSlots,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  private get repo() {
    return this.ds.getRepository(ConversationEntity);
  }

  /** A conversation, within the tenant's quota (409 QUOTA_EXCEEDED, nothing written). */
  insert(c: ConversationEntity): Promise<void> {
    return this.tx.run(async (em) => {
      await em.insert(ConversationEntity, c);
      await this.quotas.assertWithin(em, c.tenant_id, 'conversations');
    });
  }

  countForAgent(tenantId: string, agentId: string): Promise<number> {
    return this.repo.countBy({ tenant_id: tenantId, agent_id: agentId });
  }

  find(tenantId: string, id: string): Promise<ConversationEntity | null> {
    return this.repo.findOneBy({ id, tenant_id: tenantId });
  }

  /** One statement (no implicit transaction: SQLite's connection is shared, see Transactor). */
  async update(c: ConversationEntity): Promise<ConversationEntity> {
    await this.repo.update(
      { id: c.id },
      { summary: c.summary, archived: c.archived, updated_at: c.updated_at },
    );
    return c;
  }

  delete(tenantId: string, id: string): Promise<unknown> {
    return this.repo.delete({ id, tenant_id: tenantId });
  }

  /** Newest first by default; `after` is relative to the order (as Letta's cursors are). */
  async list(tenantId: string, page: ConversationPage): Promise<ConversationEntity[]> {
    const qb = this.repo
      .createQueryBuilder('c')
      .where('c.tenant_id = :tenantId AND c.hidden = :hidden', { tenantId, hidden: false });
    if (page.agentId) qb.andWhere('c.agent_id = :agentId', { agentId: page.agentId });
    if (page.archived !== 'all') {
      qb.andWhere('c.archived = :archived', { archived: page.archived === 'archived' });
    }
    if (page.summarySearch) {
      // a bounded scan (limits.search_scan_*) with instr, as the message search: LIKE '%…%' over every
      // summary (10,000 characters each) backtracked, and 2,000 summaries of a's held the server 5 s
      const { search_scan_rows: rows, search_scan_chars: chars } = this.config.limits;
      const newest = qb
        .clone()
        .select('c.id')
        .orderBy('c.created_at', 'DESC')
        .addOrderBy('c.id', 'DESC')
        .limit(rows);
      qb.andWhere(`c.id IN (${newest.getQuery()})`).andWhere(
        containsSql(this.ds, 'c.summary', 'needle', chars),
        { needle: page.summarySearch.toLowerCase() },
      );
    }
    const dir = page.order === 'asc' ? 'ASC' : 'DESC';
    if (page.after) {
      const op = page.order === 'asc' ? '>' : '<';
      const cursor = await this.find(tenantId, page.after);
      if (cursor) {
        qb.andWhere(`(c.created_at ${op} :at OR (c.created_at = :at AND c.id ${op} :id))`, {
          at: cursor.created_at,
          id: cursor.id,
        });
      }
    }
    const read = () =>
      readWithin(qb.orderBy('c.created_at', dir).addOrderBy('c.id', dir), 'c', page);
    return page.summarySearch ? this.scans.run(tenantId, read) : read();
  }

  touch(id: string, at: number): Promise<unknown> {
    return this.repo.update({ id }, { last_message_at: at, updated_at: at });
  }
}
