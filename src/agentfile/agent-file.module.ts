import { Module } from '@nestjs/common';
import { MulterModule } from '@nestjs/platform-express';
import { AgentsModule } from '../agents/agents.module';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ConversationsModule } from '../conversations/conversations.module';
import { ProcessingModule } from '../processing/processing.module';
import { ToolsModule } from '../tools/tools.module';
import { AgentFileController } from './agent-file.controller';
import { ModelsModule } from '../models/models.module';
import { AgentFileService } from './agent-file.service';

/** Letta's agent files (`.af`): export and import of one agent. */
@Module({
  imports: [
    AgentsModule,
    ToolsModule,
    ProcessingModule,
    ConversationsModule,
    ModelsModule,
    // the upload stays in memory: bounded by agent_files.max_bytes, one file, a few short fields
    MulterModule.registerAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        limits: {
          fileSize: config.agent_files.max_bytes,
          files: 1,
          fields: 20,
          fieldSize: 64 * 1024,
          parts: 24,
        },
      }),
    }),
  ],
  controllers: [AgentFileController],
  providers: [AgentFileService],
})
export class AgentFileModule {}
