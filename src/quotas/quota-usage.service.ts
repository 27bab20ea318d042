import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { quotaUsage, type QuotaUsage } from '../core/limits/quotas';
import { MessagingService } from '../processing/messaging.service';
import { TenantQuotas } from './tenant-quotas';

/**
 * What a tenant reads of its quotas. No instance id: it is `<hostname>-<pid>` by default, the operator's
 * machine; `running_runs` is said to be per instance by its `scope`.
 */
export interface TenantUsage {
  quotas: QuotaUsage[];
}

/** The calling tenant's quotas as they stand (`GET /v1/quotas`), never another tenant's. */
@Injectable()
export class QuotaUsageService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly quotas: TenantQuotas,
    private readonly messaging: MessagingService,
  ) {}

  async of(tenantId: string): Promise<TenantUsage> {
    return {
      quotas: quotaUsage(
        this.config.quotas,
        tenantId,
        await this.quotas.stored(tenantId),
        await this.quotas.storedBytes(tenantId),
        this.messaging.mailbox.runningOf(tenantId),
      ),
    };
  }
}
