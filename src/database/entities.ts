import { TenantSecretEntity } from '../secrets/tenant-secret.entity';
import { AgentEntity, AgentTagEntity } from '../agents/agent.entity';
import { AgentBlockEntity, BlockEntity } from '../agents/block.entity';
import { ConversationEntity } from '../conversations/conversation.entity';
import { ARCHIVAL_ENTITIES } from '../memory/archival.entities';
import { ToolEntity } from '../tools/tool.entity';
import { McpServerEntity } from '../mcp/mcp-server.entity';
import { MessageEntity } from '../processing/entities/message.entity';
import { MessageContextEntity } from '../processing/entities/message-context.entity';
import { RunEntity } from '../processing/entities/run.entity';
import { RunCallbackEntity } from '../processing/entities/run-callback.entity';
import { StepEntity } from '../processing/entities/step.entity';
import { PERMISSION_ENTITIES } from '../permissions/consent.entities';
import { EXECUTOR_STATE_ENTITIES } from '../rules/executor-state.entities';
import { WEBHOOK_ENTITIES } from '../webhooks/webhook.entities';
import { IDENTITY_ENTITIES } from '../identities/identity.entity';
import { TenantUsageEntity } from '../quotas/tenant-usage.entity';
import { TenantBytesEntity } from '../quotas/tenant-bytes.entity';
/**
 * Every entity of the app, listed once: the app's DataSource and the TypeORM CLI (ormconfig.ts) both use it.
 * Add a feature's entities here and its migration to ./migrations/index.ts.
 */
export const ENTITIES: Function[] = [
  TenantSecretEntity,
  ToolEntity,
  AgentEntity,
  AgentTagEntity,
  BlockEntity,
  AgentBlockEntity,
  ...ARCHIVAL_ENTITIES,
  RunEntity,
  RunCallbackEntity,
  StepEntity,
  MessageEntity,
  MessageContextEntity,
  ...PERMISSION_ENTITIES,
  ...EXECUTOR_STATE_ENTITIES,
  ...WEBHOOK_ENTITIES,
  McpServerEntity,
  ConversationEntity,
  ...IDENTITY_ENTITIES,
  TenantUsageEntity,
  TenantBytesEntity,
];
