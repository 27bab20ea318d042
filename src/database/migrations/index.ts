import { CreateTools1763800000000 } from './1763800000000-CreateTools';
import { CreateAgents1763800001000 } from './1763800001000-CreateAgents';
import { ToolExecutorState1763810000000 } from './1763810000000-ToolExecutorState';
import { Processing1763820000000 } from './1763820000000-Processing';
import { Permissions1763830000000 } from './1763830000000-Permissions';
import { AgentBudgets1763845000000 } from './1763845000000-AgentBudgets';
import { Conversations1764600000000 } from './1764600000000-Conversations';
import { AgentClientTools1764600001000 } from './1764600001000-AgentClientTools';
import { AgentLeases1764500000000 } from './1764500000000-AgentLeases';
import { UniqueFileAgentNames1764500001000 } from './1764500001000-UniqueFileAgentNames';
import { Webhooks1764700000000 } from './1764700000000-Webhooks';
import { McpServers1764800000000 } from './1764800000000-McpServers';
import { SharedBlocks1764900000000 } from './1764900000000-SharedBlocks';
import { ArchivalMemory1764900001000 } from './1764900001000-ArchivalMemory';
import { Identities1764910000000 } from './1764910000000-Identities';
import { MessageContexts1764920000000 } from './1764920000000-MessageContexts';
import { TenantSecrets1764200000000 } from './1764200000000-TenantSecrets';
import { sealWebhookSecrets } from './1764930000000-SealWebhookSecrets';
import { ParkedRunIndex1764950000000 } from './1764950000000-ParkedRunIndex';
import { Embeddings1765010000000 } from './1765010000000-Embeddings';
import { ConversationForks1765020000000 } from './1765020000000-ConversationForks';
import { StepFeedback1765020001000 } from './1765020001000-StepFeedback';
import { AgentTypes1765050000000 } from './1765050000000-AgentTypes';
import { RunCallbacks1765060000000 } from './1765060000000-RunCallbacks';
import { RunCallbackDeliveries1765160000000 } from './1765160000000-RunCallbackDeliveries';
import { ToolTagsAndReturnLimit1765070000000 } from './1765070000000-ToolTagsAndReturnLimit';
import { DedupeUnknownOutcomes1765080000000 } from './1765080000000-DedupeUnknownOutcomes';
import { RunErrorTypes1765090000000 } from './1765090000000-RunErrorTypes';
import { RunRequestKeys1765100000000 } from './1765100000000-RunRequestKeys';
import { AgentTimezones1765110000000 } from './1765110000000-AgentTimezones';
import { AgentLettaFields1765110001000 } from './1765110001000-AgentLettaFields';
import { ToolCallClaimsPerStep1765110002000 } from './1765110002000-ToolCallClaimsPerStep';
import { ConsentRequestsPerCall1765110003000 } from './1765110003000-ConsentRequestsPerCall';
import { TenantListIndexes1765110004000 } from './1765110004000-TenantListIndexes';
import { WebhookDeliveriesByTenant1765120000000 } from './1765120000000-WebhookDeliveriesByTenant';
import { ParkedBatchState1765132000000 } from './1765132000000-ParkedBatchState';
import { TenantUsage1765143000000 } from './1765143000000-TenantUsage';
import { ToolDefaultRequiresApproval1765153000000 } from './1765153000000-ToolDefaultRequiresApproval';
import { BlockTags1765153001000 } from './1765153001000-BlockTags';
import { StepModelDetails1765200000000 } from './1765200000000-StepModelDetails';
import { RunTimeToFirstToken1765260000000 } from './1765260000000-RunTimeToFirstToken';
import { BlockHidden1765270000000 } from './1765270000000-BlockHidden';
import { StoredBytes1765190000000 } from './1765190000000-StoredBytes';
/**
 * Every migration, in order. Named `<epoch>-<What>.ts`; the app runs them at boot. Those that seal data
 * are built with the secrets key.
 */
export const migrations = (secretsKey: Buffer | null): Function[] => [
  CreateTools1763800000000,
  CreateAgents1763800001000,
  ToolExecutorState1763810000000,
  Processing1763820000000,
  Permissions1763830000000,
  AgentBudgets1763845000000,
  TenantSecrets1764200000000,
  AgentLeases1764500000000,
  UniqueFileAgentNames1764500001000,
  Conversations1764600000000,
  AgentClientTools1764600001000,
  Webhooks1764700000000,
  McpServers1764800000000,
  SharedBlocks1764900000000,
  ArchivalMemory1764900001000,
  Identities1764910000000,
  MessageContexts1764920000000,
  sealWebhookSecrets(secretsKey),
  ParkedRunIndex1764950000000,
  Embeddings1765010000000,
  ConversationForks1765020000000,
  StepFeedback1765020001000,
  AgentTypes1765050000000,
  RunCallbacks1765060000000,
  ToolTagsAndReturnLimit1765070000000,
  DedupeUnknownOutcomes1765080000000,
  RunErrorTypes1765090000000,
  RunRequestKeys1765100000000,
  AgentTimezones1765110000000,
  AgentLettaFields1765110001000,
  ToolCallClaimsPerStep1765110002000,
  ConsentRequestsPerCall1765110003000,
  TenantListIndexes1765110004000,
  WebhookDeliveriesByTenant1765120000000,
  ParkedBatchState1765132000000,
  TenantUsage1765143000000,
  ToolDefaultRequiresApproval1765153000000,
  BlockTags1765153001000,
  RunCallbackDeliveries1765160000000,
  StoredBytes1765190000000,
  StepModelDetails1765200000000,
  RunTimeToFirstToken1765260000000,
  BlockHidden1765270000000,
];
