import { CreateTools1763800000000 } from './1763800000000-CreateTools';
import { CreateAgents1763800001000 } from './1763800001000-CreateAgents';
import { ToolExecutorState1763810000000 } from './1763810000000-ToolExecutorState';
import { Processing1763820000000 } from './1763820000000-Processing';
import { Permissions1763830000000 } from './1763830000000-Permissions';
import { AgentBudgets1763845000000 } from './1763845000000-AgentBudgets';
/** Every migration, in order. Named `<epoch>-<What>.ts`; the app runs them at boot. */
export const MIGRATIONS: Function[] = [
  CreateTools1763800000000,
  CreateAgents1763800001000,
  ToolExecutorState1763810000000,
  Processing1763820000000,
  Permissions1763830000000,
  AgentBudgets1763845000000,
];
