import { Inject, Module, OnModuleInit } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { AgentsService } from '../agents/agents.service';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ModelsModule } from '../models/models.module';
import { BuiltinToolHandlers } from '../tools/builtin-tool-handlers';
import { ArchivalMemoryController } from './archival-memory.controller';
import { registerArchivalTools } from './archival-tool.handlers';
import { ArchivalRepository } from './archival.repository';
import { ArchivalService } from './archival.service';
import { ArchivesController, PassagesController } from './archives.controller';

/** Archival memory: archives, passages, full-text and vector search, the archival_memory_* built-ins. */
@Module({
  imports: [AgentsModule, ModelsModule],
  controllers: [ArchivalMemoryController, ArchivesController, PassagesController],
  providers: [ArchivalRepository, ArchivalService],
})
export class MemoryModule implements OnModuleInit {
  constructor(
    private readonly handlers: BuiltinToolHandlers,
    private readonly archival: ArchivalService,
    private readonly agents: AgentsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    registerArchivalTools(this.handlers, this.archival, this.config.limits);
    this.agents.registerBeforeDelete((tenantId, agentId) =>
      this.archival.dropAgent(tenantId, agentId),
    );
  }
}
