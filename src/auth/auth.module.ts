import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ApiKeysService } from './api-keys.service';
import { RequestRateLimiter } from './request-rate.limiter';
import { StreamSlotsLimiter } from './stream-slots.limiter';
import { TenantGuard } from './tenant.guard';

@Global()
@Module({
  providers: [
    ApiKeysService,
    RequestRateLimiter,
    StreamSlotsLimiter,
    { provide: APP_GUARD, useClass: TenantGuard },
  ],
  exports: [ApiKeysService, RequestRateLimiter, StreamSlotsLimiter],
})
export class AuthModule {}
