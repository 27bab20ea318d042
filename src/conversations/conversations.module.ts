import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { ProcessingModule } from '../processing/processing.module';
import { ConversationsController } from './conversations.controller';
import { ConversationsRepository } from './conversations.repository';
import { ConversationsService } from './conversations.service';

/** Letta's conversations: separate histories of one agent, over the processing mailbox. */
@Module({
  imports: [AgentsModule, ProcessingModule],
  controllers: [ConversationsController],
  providers: [ConversationsRepository, ConversationsService],
  exports: [ConversationsService],
})
export class ConversationsModule {}
