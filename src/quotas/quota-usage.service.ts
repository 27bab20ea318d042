import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { quotaUsage, type QuotaUsage } from '../core/limits/quotas';
import { MessagingService } from '../processing/messaging.service';
import { TenantQuotas } from './tenant-quotas';

export interface TenantUsage {
  /** The instance that answered: `running_runs` is counted here. */
  instance_id: string;
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
      instance_id: this.config.cluster.instance_id,
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
