import {
  Inject,
  Injectable,
  Logger,
  OnModuleDestroy,
  OnModuleInit,
  Optional,
} from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AGENT_LEASES, type AgentLeases } from '../cluster/agent-leases';
import { CLOCK } from '../common/clock';
import { ID_GENERATOR } from '../common/ids';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import type { AgentToolExecutorSettings } from '../core/agents/agent-record';
import type { ConsentPort, ExecutorSettings, ToolInvoker } from '../core/executor/contracts';
import { ToolExecutor } from '../core/executor/tool-executor';
import type { Clock, IdGenerator } from '../core/ports';
import { GroupCommit } from '../database/group-commit';
import { DbExecutorStateStore } from './db-executor-state.store';
import { CONSENT_PORT, TOOL_INVOKER } from './tokens';

/** Without a tools module, every call is an error return (nothing silently "succeeds"). */
const NO_INVOKER: ToolInvoker = {
  invoke: () => Promise.resolve({ status: 'error', value: 'no tool implementation' }),
};

/** Without a permissions module, consent fails closed. */
const NO_CONSENT: ConsentPort = {
  check: () => Promise.resolve({ kind: 'denied', reason: 'no consent broker configured' }),
};

/** The per-agent `tool_executor` field as stored (any key may be unset). */
export type AgentExecutorField = Partial<AgentToolExecutorSettings> | null | undefined;

/**
 * The app's one ToolExecutor: the CLOCK, a database-backed state store (LRU in front), the tools
 * module's invoker and the permission broker's consent port. Prunes expired state on a timer.
 */
@Injectable()
export class ToolExecutorService implements OnModuleInit, OnModuleDestroy {
  readonly executor: ToolExecutor;
  readonly store: DbExecutorStateStore;
  private timer: NodeJS.Timeout | undefined;
  private readonly log = new Logger('ToolExecutor');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) clock: Clock,
    @Inject(ID_GENERATOR) ids: IdGenerator,
    dataSource: DataSource,
    writes: GroupCommit,
    @Inject(AGENT_LEASES) leases: AgentLeases,
    @Optional() @Inject(TOOL_INVOKER) invoker?: ToolInvoker,
    @Optional() @Inject(CONSENT_PORT) consent?: ConsentPort,
  ) {
    const d = config.tool_executor;
    this.store = new DbExecutorStateStore(
      dataSource,
      writes,
      d.cache_max_entries,
      d.cache_max_bytes,
      // one process (SQLite) holds every agent: claims keep their shared multi-row insert
      leases.shared ? leases : undefined,
    );
    this.executor = new ToolExecutor({
      clock,
      ids,
      store: this.store,
      invoker: invoker ?? NO_INVOKER,
      consent: consent ?? NO_CONSENT,
      limits: { batchTtlMs: d.batch_state_ttl_seconds * 1000 },
    });
  }

  /** config.tool_executor defaults, overridden by the agent's `tool_executor` field. */
  settingsFor(agentField: AgentExecutorField): ExecutorSettings {
    return settingsFor(this.config.tool_executor, agentField);
  }

  onModuleInit(): void {
    const every = this.config.tool_executor.prune_interval_seconds * 1000;
    this.timer = setInterval(() => {
      this.executor.pruneExpired().catch((e: unknown) => {
        this.log.warn(
          `pruning executor state failed: ${e instanceof Error ? e.message : String(e)}`,
        );
      });
    }, every);
    this.timer.unref(); // never keeps the process alive
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

export function settingsFor(
  defaults: AppConfig['tool_executor'],
  agentField: AgentExecutorField,
): ExecutorSettings {
  const f = agentField ?? {};
  return {
    toolTimeoutMs: (f.tool_timeout_seconds ?? defaults.tool_timeout_seconds) * 1000,
    consentTimeoutMs: (f.consent_timeout_seconds ?? defaults.consent_timeout_seconds) * 1000,
    dedupeWindowMs: (f.dedupe_window_seconds ?? defaults.dedupe_window_seconds) * 1000,
  };
}
