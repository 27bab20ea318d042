import type { Clock, IdGenerator } from '../ports';
import type {
  AgentToolSetup,
  AllowedTools,
  ConsentPort,
  ExecutionMeta,
  ExecutorLimits,
  ExecutorStateStore,
  PassState,
  ToolCallRequest,
  ToolInvoker,
  ToolOutcome,
} from './contracts';

export interface ToolExecutorDeps {
  clock: Clock;
  store: ExecutorStateStore;
  invoker: ToolInvoker;
  consent: ConsentPort;
  limits: ExecutorLimits;
  /** Ids for calls the executor starts itself (start constraints, exit requirements). */
  ids?: Pick<IdGenerator, 'prefixed'>;
}

/**
 * Decides, for every tool call an agent's model makes, whether it may run; runs it with a timeout;
 * records what the scopes need (pass, batch, persistent). Pure: every effect goes through a port.
 */
export class ToolExecutor {
  constructor(private readonly deps: ToolExecutorDeps) {}

  /** Fresh per-pass state: call at the user message and at each heartbeat continuation. */
  newPass(setup: AgentToolSetup, batchId: string): PassState {
    void setup;
    return {
      batchId,
      history: [],
      startConstraintsDone: false,
      exitRequirementsPending: [],
      phase: 'start',
    };
  }

  /** The tools the next model call may be offered, and the one to force when rules narrow to one. */
  allowedTools(setup: AgentToolSetup, pass: PassState): Promise<AllowedTools> {
    void pass;
    return Promise.resolve({ tools: setup.tools.map((t) => t.name) });
  }

  /** dedupe → pass rules → batch rules → cooldown → consent → arguments → execute → record. */
  execute(
    setup: AgentToolSetup,
    pass: PassState,
    call: ToolCallRequest,
    meta: ExecutionMeta,
  ): Promise<ToolOutcome> {
    void setup;
    void pass;
    void call;
    void meta;
    return Promise.reject(new Error('not implemented yet'));
  }

  /** Contiguous read_only calls run concurrently, the others alone in order; one outcome per call, in order. */
  executeBatch(
    setup: AgentToolSetup,
    pass: PassState,
    calls: ToolCallRequest[],
    meta: ExecutionMeta,
  ): Promise<ToolOutcome[]> {
    void setup;
    void pass;
    void calls;
    void meta;
    return Promise.resolve([]);
  }

  /** Runs the run_first tools (with their prefilled args) at the start of a pass. */
  executeStartConstraints(
    setup: AgentToolSetup,
    pass: PassState,
    meta: ExecutionMeta,
  ): Promise<ToolOutcome[]> {
    void setup;
    void pass;
    void meta;
    return Promise.resolve([]);
  }

  /** What must still run before the batch may end (required_before_exit, triggered requires_following_tools). */
  pendingExitRequirements(setup: AgentToolSetup, pass: PassState): Promise<string[]> {
    void setup;
    void pass;
    return Promise.resolve([]);
  }

  /** Runs each pending exit requirement once (args `{}`), through the full checks. */
  executeExitRequirements(
    setup: AgentToolSetup,
    pass: PassState,
    meta: ExecutionMeta,
  ): Promise<ToolOutcome[]> {
    void setup;
    void pass;
    void meta;
    return Promise.resolve([]);
  }

  /** An exit_loop tool ran in this pass. */
  shouldExitLoop(pass: PassState): boolean {
    return pass.phase === 'exit_requested';
  }

  /** False when the tool has a continue_loop rule (the loop continues without a heartbeat request). */
  requiresHeartbeat(setup: AgentToolSetup, toolName: string): boolean {
    void setup;
    void toolName;
    return true;
  }

  /** Drops the batch's state (max calls, exclusive groups). */
  async completeBatch(batchId: string): Promise<void> {
    await this.deps.store.deleteBatch(batchId);
  }

  /** Drops expired dedupe entries, old claims and abandoned batch state. */
  async pruneExpired(): Promise<void> {
    await this.deps.store.pruneExpired(this.deps.clock.now(), this.deps.limits.batchTtlMs);
  }
}
