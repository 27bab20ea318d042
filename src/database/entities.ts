import { AgentEntity, AgentTagEntity } from '../agents/agent.entity';
import { ToolEntity } from '../tools/tool.entity';
import { MessageEntity } from '../processing/entities/message.entity';
import { RunEntity } from '../processing/entities/run.entity';
import { StepEntity } from '../processing/entities/step.entity';
import { PERMISSION_ENTITIES } from '../permissions/consent.entities';
import { EXECUTOR_STATE_ENTITIES } from '../rules/executor-state.entities';
/**
 * Every entity of the app, listed once: the app's DataSource and the TypeORM CLI (ormconfig.ts) both use it.
 * Add a feature's entities here and its migration to ./migrations/index.ts.
 */
export const ENTITIES: Function[] = [
  ToolEntity,
  AgentEntity,
  AgentTagEntity,
  RunEntity,
  StepEntity,
  MessageEntity,
  ...PERMISSION_ENTITIES,
  ...EXECUTOR_STATE_ENTITIES,
];
