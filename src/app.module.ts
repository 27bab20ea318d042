import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { AgentsModule } from './agents/agents.module';
import { AuthModule } from './auth/auth.module';
import { DomainErrorFilter } from './common/domain-error.filter';
import { AppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { CoreProvidersModule } from './common/core-providers.module';
import { DatabaseModule } from './database/database.module';
import { HealthController } from './health/health.controller';
import { ToolsModule } from './tools/tools.module';
import { RunEventsModule } from './common/run-events';
import { ModelsModule } from './models/models.module';
import { PermissionsModule } from './permissions/permissions.module';
import { ProcessingModule } from './processing/processing.module';
import { RulesModule } from './rules/rules.module';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        CoreProvidersModule,
        DatabaseModule,
        AuthModule,
        ToolsModule,
        AgentsModule,
        RunEventsModule,
        ModelsModule,
        PermissionsModule,
        RulesModule,
        ProcessingModule,
      ],
      controllers: [HealthController],
      providers: [{ provide: APP_FILTER, useClass: DomainErrorFilter }],
    };
  }
}
