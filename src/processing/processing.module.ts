import { Inject, Module, OnModuleInit } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import { ID_GENERATOR } from '../common/ids';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import type { Clock, IdGenerator } from '../core/ports';
import { AgentsModule } from '../agents/agents.module';
import { AgentsService } from '../agents/agents.service';
import { isoInTimeZone } from '../core/agents/timezone';
import { ModelsModule } from '../models/models.module';
import { BuiltinToolHandlers } from '../tools/builtin-tool-handlers';
import { AgentProcessor } from './agent-processor.service';
import { RunCallbacks } from './run-callbacks';
import { RunCallbacksRepository } from './run-callbacks.repository';
import { RunChunks } from './run-chunks';
import { AgentToolRunController } from './agent-tool-run.controller';
import { AgentToolRunService } from './agent-tool-run.service';
import { HistoryService } from './history.service';
import { MessageContextController } from './message-context.controller';
import { MessageContextService } from './message-context.service';
import { MessagesController } from './messages.controller';
import { MessageResponder } from './message-responder';
import { MessagingService } from './messaging.service';
import { PROCESSING_ADAPTERS } from './processing.adapters';
import { ProcessingLifecycle } from './processing-lifecycle.service';
import { initialMessageRows, ProcessingRepository } from './processing.repository';
import { RunRecovery } from './run-recovery';

import { RunsController } from './runs.controller';
import { StepsController } from './steps.controller';
import {
  SEARCH_QUERY_MAX as CONVERSATION_SEARCH_QUERY_MAX,
  TenantMessagesController,
} from './tenant-messages.controller';

/** The AgentProcessor, its mailbox, runs/steps/messages and the messaging and runs API. */
@Module({
  imports: [ModelsModule, AgentsModule],
  controllers: [
    MessagesController,
    MessageContextController,
    RunsController,
    StepsController,
    TenantMessagesController,
    AgentToolRunController,
  ],
  providers: [
    ...PROCESSING_ADAPTERS,
    ProcessingRepository,
    AgentProcessor,
    RunCallbacks,
    RunCallbacksRepository,
    RunChunks,
    MessagingService,
    HistoryService,
    MessageResponder,
    ProcessingLifecycle,
    RunRecovery,
    MessageContextService,
    AgentToolRunService,
  ],
  exports: [
    MessagingService,
    HistoryService,
    MessageResponder,
    ProcessingRepository,
    MessageContextService,
  ],
})
export class ProcessingModule implements OnModuleInit {
  constructor(
    private readonly handlers: BuiltinToolHandlers,
    private readonly repo: ProcessingRepository,
    private readonly agents: AgentsService,
    private readonly messaging: MessagingService,
    private readonly contexts: MessageContextService,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.agents.registerPendingApprovalSource((tenantId, agentId) =>
      this.repo.pendingApproval(tenantId, agentId),
    );
    this.agents.registerInContextSource((agentId) =>
      this.contexts.inContextMessageIds(agentId, null),
    );
    // Letta's initial_message_sequence: the new agent's first messages, in its context window
    this.agents.registerInitialMessagesWriter(async (tenantId, agentId, messages) => {
      const newId = () => this.ids.prefixed('message');
      await this.repo.appendImported(
        agentId,
        initialMessageRows(tenantId, agentId, messages, newId, this.clock.now()),
      );
    });
    // a deleted agent leaves nothing running, queued or waiting for a person (its runs stay for the audit)
    this.agents.registerBeforeDelete(async (tenantId, agentId) => {
      await this.messaging.stopRuns(tenantId, agentId, null, 'delete');
    });
    // and no history: its messages are the tenant's stored bytes (quotas.stored_bytes)
    this.agents.registerAfterDelete((tenantId, agentId) =>
      this.repo.deleteHistory(tenantId, agentId),
    );
    this.handlers.register('conversation_search', async (args, ctx) => {
      const query = typeof args.query === 'string' ? args.query : '';
      // the API's bound (POST /v1/messages/search): a longer query is the model's mistake, told as such
      if (query.length > CONVERSATION_SEARCH_QUERY_MAX)
        return `Error: query is ${query.length} characters; at most ${CONVERSATION_SEARCH_QUERY_MAX}. Search for a shorter phrase.`;
      const limit = typeof args.limit === 'number' && args.limit > 0 ? Math.min(args.limit, 50) : 5;
      const hits = await this.repo.searchMessages(ctx.tenantId, ctx.agentId, query, {
        limit,
        maxBytes: this.config.limits.max_page_bytes,
      });
      if (hits.length === 0) return `No results found for "${query}".`;
      // dates in the agent's time zone, with its offset, as Letta's conversation_search gives them
      const { timezone } = await this.agents.getForTenant(ctx.tenantId, ctx.agentId);
      return JSON.stringify(
        hits.map((m) => ({
          date: isoInTimeZone(new Date(m.created_at), timezone),
          role: m.message_type === 'user_message' ? 'user' : 'assistant',
          content: m.payload.content,
        })),
      );
    });
  }
}
