import { Module, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ModelsModule } from '../models/models.module';
import { BuiltinToolHandlers } from '../tools/builtin-tool-handlers';
import { ToolInvokerService } from '../tools/tool-invoker.service';
import { ToolsService } from '../tools/tools.service';
import { AgentFilesLoader } from './agent-files.loader';
import { AgentEntity } from './agent.entity';
import { BlocksController } from './blocks.controller';
import { BlocksRepository } from './blocks.repository';
import { BlocksService } from './blocks.service';
import { AgentsController, IdentityAgentsController } from './agents.controller';
import { IdentitiesModule } from '../identities/identities.module';
import { IdentitiesService } from '../identities/identities.service';
import { AgentsRepository } from './agents.repository';
import { AgentsService } from './agents.service';
import { MemoryBlocksController } from './memory-blocks.controller';
import { registerMemoryTools } from './memory-tool.handlers';
import { TagsController } from './tags.controller';

/** Needs ToolsModule (global) for tool look-ups; registers the core memory tools' handlers there. */
@Module({
  imports: [TypeOrmModule.forFeature([AgentEntity]), ModelsModule, IdentitiesModule],
  controllers: [
    AgentsController,
    IdentityAgentsController,
    MemoryBlocksController,
    BlocksController,
    TagsController,
  ],
  providers: [AgentsRepository, BlocksRepository, BlocksService, AgentsService, AgentFilesLoader],
  exports: [AgentsService],
})
export class AgentsModule implements OnModuleInit {
  constructor(
    private readonly handlers: BuiltinToolHandlers,
    private readonly agents: AgentsService,
    private readonly tools: ToolsService,
    private readonly identities: IdentitiesService,
    private readonly invoker: ToolInvokerService,
  ) {}

  onModuleInit(): void {
    registerMemoryTools(this.handlers, this.agents);
    this.tools.registerUsageSource((tenantId, name) => this.agents.usingTool(tenantId, name));
    this.identities.registerAgentExistence((tenantId, ids) => this.agents.existing(tenantId, ids));
    this.invoker.registerTimeZoneSource(
      async (tenantId, agentId) => (await this.agents.getForTenant(tenantId, agentId)).timezone,
    );
  }
}
