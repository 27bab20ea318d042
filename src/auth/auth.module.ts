import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ApiKeysService } from './api-keys.service';
import { TenantGuard } from './tenant.guard';

@Global()
@Module({
  providers: [ApiKeysService, { provide: APP_GUARD, useClass: TenantGuard }],
  exports: [ApiKeysService],
})
export class AuthModule {}
