import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { TENANT_SECRET_READER, TenantSecretReader } from '../models/models.service';
import { SECRET_CIPHER, SecretCipher } from './secret-cipher';
import { SecretsController } from './secrets.controller';
import { SecretsRepository } from './secrets.repository';
import { SecretsService } from './secrets.service';
import { TenantSecretEntity } from './tenant-secret.entity';

/**
 * Global: tools, models and MCP servers resolve `${NAME}` through SecretsService; webhooks seal their
 * signing secrets with SECRET_CIPHER.
 */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([TenantSecretEntity])],
  controllers: [SecretsController],
  providers: [
    {
      provide: SECRET_CIPHER,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig): SecretCipher | null =>
        config.secrets.encryption_key ? new SecretCipher(config.secrets.encryption_key) : null,
    },
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
  exports: [SecretsService, TENANT_SECRET_READER, SECRET_CIPHER],
})
export class SecretsModule {}
