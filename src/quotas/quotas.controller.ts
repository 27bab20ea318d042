import { Controller, Get } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { QuotaUsageService, type TenantUsage } from './quota-usage.service';

/** The caller's quotas: what its tenant uses of each, and the bound (an extension: Letta has none). */
@Controller('v1/quotas')
export class QuotasController {
  constructor(private readonly usage: QuotaUsageService) {}

  @Get()
  async get(@Tenant() tenant: string): Promise<TenantUsage> {
    return this.usage.of(tenant);
  }
}
