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
} from '../core/limits/quotas';
import { TenantUsageEntity } from './tenant-usage.entity';

/**
 * The tenant's stored counts against its quotas (`quotas.*`). The database counts (TenantUsageEntity);
 * a create asks `assertWithin` in its own transaction, after its insert: the counter row is then locked
 * by that insert (PostgreSQL), so concurrent creates at the limit are told apart exactly, and a refusal
 * rolls the insert back with the rest of the transaction.
 */
@Injectable()
export class TenantQuotas {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly ds: DataSource,
  ) {}

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

  private limitOf(tenantId: string, quota: StoredQuota): number {
    return quotaFor(this.config.quotas, tenantId, quota);
  }

  private settingOf(tenantId: string, quota: StoredQuota): string {
    return quotaSetting(this.config.quotas, tenantId, quota);
  }
}

function quotaExceeded(r: QuotaRefusal, setting: string): DomainError {
  const what = r.quota.replace('_', ' ');
  return new DomainError(
    'conflict',
    'QUOTA_EXCEEDED',
    `the tenant may store at most ${r.limit} ${what} (${setting}); this would make ${r.used}. Delete some first, or ask the operator for more`,
    { quota: r.quota, limit: r.limit, used: r.used, setting },
  );
}
