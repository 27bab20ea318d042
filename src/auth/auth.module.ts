import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ApiKeysService } from './api-keys.service';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { RequestOriginPolicy } from './request-origin';
import { RequestRateLimiter } from './request-rate.limiter';
import { StreamSlotsLimiter } from './stream-slots.limiter';
import { TenantGuard } from './tenant.guard';

@Global()
@Module({
  providers: [
    ApiKeysService,
    RequestRateLimiter,
    StreamSlotsLimiter,
    {
      provide: RequestOriginPolicy,
      useFactory: (config: AppConfig) => new RequestOriginPolicy(config),
      inject: [APP_CONFIG],
    },
    { provide: APP_GUARD, useClass: TenantGuard },
  ],
  exports: [ApiKeysService, RequestRateLimiter, StreamSlotsLimiter, RequestOriginPolicy],
})
export class AuthModule {}
