import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { DomainError } from '../common/domain-error';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import {
  quotaFor,
  quotaRefusal,
  quotaSetting,
  type QuotaRefusal,
  type StoredQuota,
  type TenantQuota,
} from '../core/limits/quotas';
import { sqlTable } from '../database/sql-names';
import { TenantUsageEntity } from './tenant-usage.entity';

/** The first key of the transaction lock a tenant's byte checks take turns on (PostgreSQL). */
const BYTES_LOCK = 0x62797465;

/**
 * The tenant's stored counts against its quotas (`quotas.*`). The database counts (TenantUsageEntity);
 * a create asks `assertWithin` in its own transaction, after its insert: the counter row is then locked
 * by that insert (PostgreSQL), so concurrent creates at the limit are told apart exactly, and a refusal
 * rolls the insert back with the rest of the transaction.
 */
@Injectable()
export class TenantQuotas {
  private readonly pg: boolean;
  private readonly bytesSql: string;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly ds: DataSource,
  ) {
    this.pg = ds.options.type === 'postgres';
    const table = sqlTable(config.database.schema, 'tenant_bytes');
    this.bytesSql = `SELECT COALESCE(SUM(used), 0) AS used FROM ${table} WHERE tenant_id = ${this.pg ? '$1' : '?'}`;
  }

  /** 409 QUOTA_EXCEEDED when the write in `em`, which added `added` of `quota`, took the tenant past it. */
  async assertWithin(
    em: EntityManager,
    tenantId: string,
    quota: StoredQuota,
    added = 1,
  ): Promise<void> {
    if (added <= 0) return;
    const row = await em.findOneBy(TenantUsageEntity, { tenant_id: tenantId, quota });
    const refusal = quotaRefusal(quota, this.limitOf(tenantId, quota), row?.used ?? 0, added);
    if (refusal) throw quotaExceeded(refusal, this.settingOf(tenantId, quota));
  }

  /**
   * Before a write that will add `adding` of `quota` (net): 409 QUOTA_EXCEEDED when it cannot fit, so a
   * request refused for this writes nothing of its other parts. Not exact under concurrency: the write's
   * own `assertWithin` is.
   */
  async assertRoom(tenantId: string, quota: StoredQuota, adding: number): Promise<void> {
    if (adding <= 0) return;
    const row = await this.ds
      .getRepository(TenantUsageEntity)
      .findOneBy({ tenant_id: tenantId, quota });
    const refusal = quotaRefusal(
      quota,
      this.limitOf(tenantId, quota),
      (row?.used ?? 0) + adding,
      adding,
    );
    if (refusal) throw quotaExceeded(refusal, this.settingOf(tenantId, quota));
  }

  /** What the tenant stores, per quota (one row each; a quota never used has none). */
  async stored(tenantId: string): Promise<Partial<Record<StoredQuota, number>>> {
    const rows = await this.ds.getRepository(TenantUsageEntity).findBy({ tenant_id: tenantId });
    return Object.fromEntries(rows.map((r) => [r.quota, Number(r.used)]));
  }

  /** The bytes the tenant stores (`quotas.stored_bytes`): its stripes summed, as `em` sees them. */
  async storedBytes(tenantId: string, em: EntityManager = this.ds.manager): Promise<number> {
    const [row] = await em.query<{ used: string | number }[]>(this.bytesSql, [tenantId]);
    return Number(row?.used ?? 0);
  }

  /**
   * 409 QUOTA_EXCEEDED when the write in `em`, which added `added` bytes, took the tenant past
   * `quotas.stored_bytes`. `later`: bytes the write brings after it commits (a message's copy in the
   * history, stored when its run starts), counted as if stored. On PostgreSQL a tenant's checks take turns
   * on a transaction lock, and the sum read after it holds every earlier check's bytes: of two writes at
   * the limit on two instances, the second sees the first. A write that adds nothing is never refused.
   */
  async assertBytesWithin(
    em: EntityManager,
    tenantId: string,
    added: number,
    later = 0,
  ): Promise<void> {
    if (added <= 0) return;
    if (this.pg)
      await em.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [BYTES_LOCK, tenantId]);
    this.refuseBytes(tenantId, (await this.storedBytes(tenantId, em)) + later, added);
  }

  /**
   * Before a write that will add `adding` bytes: 409 QUOTA_EXCEEDED when they cannot fit (as `assertRoom`:
   * so a refused request costs no embedding call). Not exact under concurrency: the write's own
   * `assertBytesWithin` is.
   */
  async assertBytesRoom(tenantId: string, adding: number): Promise<void> {
    if (adding <= 0) return;
    this.refuseBytes(tenantId, (await this.storedBytes(tenantId)) + adding, adding);
  }

  /**
   * Before a run's model call: the refusal when the tenant stores more than `quotas.stored_bytes` (its
   * runs then end), else null. Not a lock: what runs store is counted, and only new writes are refused.
   */
  async bytesOver(tenantId: string): Promise<QuotaRefusal | null> {
    const limit = this.limitOf(tenantId, 'stored_bytes');
    const used = await this.storedBytes(tenantId);
    return used > limit ? { quota: 'stored_bytes', limit, used } : null;
  }

  /** The setting that bounds the tenant's `quota` (`quotas.x` or `quotas.tenants.t.x`). */
  settingOf(tenantId: string, quota: TenantQuota): string {
    return quotaSetting(this.config.quotas, tenantId, quota);
  }

  /** 409 QUOTA_EXCEEDED when `used` bytes (a write's `added` with them) are past the tenant's bound. */
  private refuseBytes(tenantId: string, used: number, added: number): void {
    const limit = this.limitOf(tenantId, 'stored_bytes');
    const refusal = quotaRefusal('stored_bytes', limit, used, added);
    if (refusal) throw quotaExceeded(refusal, this.settingOf(tenantId, 'stored_bytes'));
  }

  private limitOf(tenantId: string, quota: TenantQuota): number {
    return quotaFor(this.config.quotas, tenantId, quota);
  }
}

export function quotaExceeded(r: QuotaRefusal, setting: string): DomainError {
  const details = { quota: r.quota, limit: r.limit, used: r.used, setting };
  if (r.quota === 'stored_bytes')
    return new DomainError(
      'conflict',
      'QUOTA_EXCEEDED',
      `the tenant may store at most ${r.limit} bytes (${setting}: messages, runs' requests, passages, memory blocks, agents); this would make ${r.used}. Delete agents (their messages go with them), passages or blocks first, or ask the operator for more`,
      details,
    );
  const what = r.quota.replace('_', ' ');
  return new DomainError(
    'conflict',
    'QUOTA_EXCEEDED',
    `the tenant may store at most ${r.limit} ${what} (${setting}); this would make ${r.used}. Delete some first, or ask the operator for more`,
    details,
  );
}
