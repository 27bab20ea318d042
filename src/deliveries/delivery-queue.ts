import type { DataSource, EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';
import type { DueTenant } from '../core/limits/fair-fill';
import type { Transactor } from '../database/transactor';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** The columns every stored outbound POST has (webhook deliveries, run callbacks). */
export interface StoredDelivery {
  id: string;
  tenantId: string;
  /** The exact body sent on every attempt. */
  body: string;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: number;
  /** Taken by an instance for one attempt until then; another one retries it after. */
  claimedUntil: number | null;
  createdAt: number;
  lastAttemptAt: number | null;
}

/** What one attempt leaves on its row (the claim is released with it). */
export type Attempt = Pick<
  StoredDelivery,
  'status' | 'attempts' | 'lastStatusCode' | 'lastError' | 'nextAttemptAt' | 'lastAttemptAt'
>;

type Column = keyof StoredDelivery;

/**
 * The queries of a table of stored deliveries, one for each such table: which tenants have due work, and
 * taking some of one tenant's for an attempt. Claims are `FOR UPDATE SKIP LOCKED` on PostgreSQL (two
 * instances never take one row, nor wait for each other's rows) and the conditions themselves on SQLite
 * (one writer); a claim that outlives its instance expires (`claimed_until`) and the row is due again.
 */
export class DeliveryQueue<E extends StoredDelivery & ObjectLiteral> {
  constructor(
    private readonly ds: DataSource,
    private readonly tx: Transactor,
    private readonly entity: EntityTarget<E>,
  ) {}

  /** A property's column name (`run_id` for a run callback's `id`). */
  private col(p: Column): string {
    return this.ds.getMetadata(this.entity).findColumnWithPropertyName(p)!.databaseName;
  }

  /**
   * The tenants with pending rows whose time has come and that no live claim holds, those of `except`
   * left out (at their share of this instance's attempts): how many each has and its oldest, oldest
   * first, at most `limit` tenants.
   */
  async dueTenants(now: number, limit: number, except: readonly string[]): Promise<DueTenant[]> {
    const [tenant, next] = [this.col('tenantId'), this.col('nextAttemptAt')];
    const q = this.due(this.ds.manager, now)
      .select(`d.${tenant}`, 'tenant_id')
      .addSelect('COUNT(*)', 'due')
      .addSelect(`MIN(d.${next})`, 'oldest');
    if (except.length) q.andWhere(`d.${tenant} NOT IN (:...except)`, { except });
    const rows = await q
      .groupBy(`d.${tenant}`)
      .orderBy(`MIN(d.${next})`, 'ASC')
      .addOrderBy(`d.${tenant}`, 'ASC')
      .limit(limit)
      .getRawMany<{ tenant_id: string; due: string | number; oldest: string | number }>();
    return rows.map((r) => ({
      tenantId: r.tenant_id,
      due: Number(r.due),
      oldest: Number(r.oldest),
    }));
  }

  /**
   * Takes up to `limit` of the tenant's due rows, oldest first, for one attempt each (until `until`),
   * those of `skip` left out (attempts still open here, when the clock passed their claim).
   */
  async claimDue(
    tenantId: string,
    now: number,
    limit: number,
    until: number,
    skip: readonly string[],
  ): Promise<E[]> {
    if (limit <= 0) return [];
    const id = this.col('id');
    return this.tx.run(async (em) => {
      const q = this.due(em, now)
        .andWhere(`d.${this.col('tenantId')} = :tenantId`, { tenantId })
        .orderBy(`d.${this.col('nextAttemptAt')}`, 'ASC')
        .addOrderBy(`d.${id}`, 'ASC')
        .limit(limit);
      if (skip.length) q.andWhere(`d.${id} NOT IN (:...skip)`, { skip });
      if (em.connection.options.type === 'postgres')
        q.setLock('pessimistic_write').setOnLocked('skip_locked');
      const rows = await q.getMany();
      if (rows.length === 0) return [];
      await em
        .createQueryBuilder()
        .update(this.entity)
        .set({ claimedUntil: until })
        .whereInIds(rows.map((r) => r.id))
        .execute();
      return rows.map((r) => ({ ...r, claimedUntil: until }));
    });
  }

  /** The attempt's outcome; the claim is released. */
  async recordAttempt(id: string, a: Attempt, em: EntityManager = this.ds.manager): Promise<void> {
    await em
      .createQueryBuilder()
      .update(this.entity)
      .set({ ...a, claimedUntil: null })
      .whereInIds([id])
      .execute();
  }

  /** Finished rows created before `before`. */
  async prune(before: number, em: EntityManager = this.ds.manager): Promise<void> {
    await em
      .createQueryBuilder()
      .delete()
      .from(this.entity)
      .where(`${this.col('status')} IN (:...done)`, { done: ['delivered', 'failed'] })
      .andWhere(`${this.col('createdAt')} < :before`, { before })
      .execute();
  }

  /** Pending rows whose time has come that no live claim holds. */
  private due(em: EntityManager, now: number) {
    const claimed = this.col('claimedUntil');
    return em
      .createQueryBuilder<E>(this.entity, 'd')
      .where(`d.${this.col('status')} = :pending`, { pending: 'pending' })
      .andWhere(`d.${this.col('nextAttemptAt')} <= :now`, { now })
      .andWhere(`(d.${claimed} IS NULL OR d.${claimed} < :now)`, { now });
  }
}
