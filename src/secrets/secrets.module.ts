import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { TENANT_SECRET_READER, TenantSecretReader } from '../models/models.service';
import { SecretsController } from './secrets.controller';
import { SecretsRepository } from './secrets.repository';
import { SecretsService } from './secrets.service';
import { TenantSecretEntity } from './tenant-secret.entity';

/** Global: tools, models and MCP servers resolve `${NAME}` through SecretsService. */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([TenantSecretEntity])],
  controllers: [SecretsController],
  providers: [
    SecretsRepository,
    SecretsService,
    {
      provide: TENANT_SECRET_READER,
      inject: [SecretsService],
      useFactory:
        (secrets: SecretsService): TenantSecretReader =>
        async (tenantId, name) =>
          (await secrets.resolve(tenantId, [name]))[name],
    },
  ],
  exports: [SecretsService, TENANT_SECRET_READER],
})
export class SecretsModule {}
