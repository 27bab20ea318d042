import { DynamicModule, Module } from '@nestjs/common';
import { AgentFileModule } from './agentfile/agent-file.module';
import { APP_FILTER } from '@nestjs/core';
import { AgentsModule } from './agents/agents.module';
import { IdentitiesModule } from './identities/identities.module';
import { AuthModule } from './auth/auth.module';
import { ClusterModule } from './cluster/cluster.module';
import { DomainErrorFilter } from './common/domain-error.filter';
import { AppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { CoreProvidersModule } from './common/core-providers.module';
import { DatabaseModule } from './database/database.module';
import { QuotasModule } from './quotas/quotas.module';
import { QuotasApiModule } from './quotas/quotas-api.module';
import { HealthController } from './health/health.controller';
import { ConsoleController } from './console/console.controller';
import { SecretsModule } from './secrets/secrets.module';
import { ToolsModule } from './tools/tools.module';
import { McpModule } from './mcp/mcp.module';
import { MemoryModule } from './memory/memory.module';
import { RunEventsModule } from './common/run-events';
import { ModelsModule } from './models/models.module';
import { ObservabilityModule } from './observability/observability.module';
import { PermissionsModule } from './permissions/permissions.module';
import { ProcessingModule } from './processing/processing.module';
import { ConversationsModule } from './conversations/conversations.module';
import { RulesModule } from './rules/rules.module';
import { WebhooksModule } from './webhooks/webhooks.module';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        CoreProvidersModule,
        DatabaseModule,
        QuotasModule,
        ClusterModule,
        AuthModule,
        SecretsModule,
        ToolsModule,
        McpModule,
        IdentitiesModule,
        AgentsModule,
        MemoryModule,
        RunEventsModule,
        ModelsModule,
        PermissionsModule,
        RulesModule,
        ProcessingModule,
        ConversationsModule,
        AgentFileModule,
        WebhooksModule,
        QuotasApiModule,
        ObservabilityModule,
      ],
      controllers: [HealthController, ConsoleController],
      providers: [{ provide: APP_FILTER, useClass: DomainErrorFilter }],
    };
  }
}
