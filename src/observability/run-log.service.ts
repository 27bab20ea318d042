import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { Subscription } from 'rxjs';
import { RunEventsBus } from '../common/run-events';

/** How many run starts are remembered for their durations (runs that never end are forgotten). */
const MAX_OPEN = 10_000;

/**
 * One log line per run end: status, stop reason, steps, tokens, duration and, when it failed, the cause
 * (so an `llm_api_error` is explained in the log, not only in GET /v1/runs/{id}).
 */
@Injectable()
export class RunLogService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Runs');
  private readonly started = new Map<string, number>();
  private subscription: Subscription | null = null;

  constructor(private readonly bus: RunEventsBus) {}

  onModuleInit(): void {
    this.subscription = this.bus.local$.subscribe((e) => {
      if (e.type === 'run.started') {
        if (this.started.size >= MAX_OPEN) this.started.delete(this.started.keys().next().value!);
        this.started.set(e.runId, performance.now());
        return;
      }
      if (e.type !== 'run.completed') return;
      const t0 = this.started.get(e.runId);
      this.started.delete(e.runId);
      const usage = e.data.usage as { step_count?: number; total_tokens?: number } | null;
      const line = {
        msg: 'run ended',
        run_id: e.runId,
        agent_id: e.agentId,
        tenant: e.tenantId,
        status: e.data.status,
        stop_reason: e.data.stop_reason,
        steps: usage?.step_count ?? 0,
        total_tokens: usage?.total_tokens ?? 0,
        ...(t0 !== undefined ? { duration_ms: Math.round(performance.now() - t0) } : {}),
        ...(e.data.error ? { error: e.data.error } : {}),
      };
      if (e.data.status === 'failed') this.logger.warn(line);
      else this.logger.log(line);
    });
  }

  // not at module destroy: the runs that end while the shutdown waits for them are logged too
  onApplicationShutdown(): void {
    this.subscription?.unsubscribe();
  }
}
