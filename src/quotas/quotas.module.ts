import { Global, Module } from '@nestjs/common';
import { TenantQuotas } from './tenant-quotas';

/** Per-tenant quotas: the stored counts every feature's create checks (docs/security.md, "Quotas"). */
@Global()
@Module({ providers: [TenantQuotas], exports: [TenantQuotas] })
export class QuotasModule {}
