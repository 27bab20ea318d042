import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { CLOCK } from '../common/clock';
import { ID_GENERATOR } from '../common/ids';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import type { Clock, IdGenerator } from '../core/ports';
import { AgentProcessor } from './agent-processor.service';
import type { RunEntity } from './entities/run.entity';
import { EMPTY_USAGE } from './message.mapper';
import { MessagingService } from './messaging.service';
import { newMessageRow, ProcessingRepository } from './processing.repository';
import { AGENT_PORT, AgentPort, EXECUTOR_PORT, ExecutorPort } from './processing.ports';

export const OUTCOME_UNKNOWN =
  '[ToolError] outcome unknown (server restarted while the tool was running); it was not run again';

/**
 * Crash recovery at boot and graceful shutdown. Nothing lost, nothing run twice: a run a crash left
 * `running` ends failed/`interrupted`, its in-flight calls get an error return (never re-executed),
 * and queued runs are processed in their order.
 */
@Injectable()
export class ProcessingLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('ProcessingLifecycle');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    private readonly repo: ProcessingRepository,
    private readonly messaging: MessagingService,
    private readonly processor: AgentProcessor,
    @Inject(AGENT_PORT) private readonly agents: AgentPort,
    @Inject(EXECUTOR_PORT) private readonly exec: ExecutorPort,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    for (const run of await this.repo.runsWithStatus('running')) await this.interrupt(run);
    const queued = await this.repo.runsWithStatus('created');
    for (const run of queued) this.messaging.enqueue(run, run.input.kind === 'resume');
    if (queued.length) this.logger.log(`resuming ${queued.length} queued run(s)`);
    // decisions stored before a crash whose continuation was not yet created
    for (const run of await this.repo.allParkedRuns()) {
      await this.messaging.resumeIfDecided(run.tenant_id, run.agent_id);
    }
  }

  /** Ends a run the last process left running; its unanswered tool calls get an error return. */
  async interrupt(run: RunEntity): Promise<void> {
    const batch = await this.repo.batchMessages(run.batch_id, [
      'tool_call_message',
      'tool_return_message',
    ]);
    const answered = new Set(
      batch
        .filter((m) => m.message_type === 'tool_return_message')
        .map((m) => String(m.payload.tool_call_id)),
    );
    const parkedRun = await this.repo.findParkedRun(run.tenant_id, run.agent_id);
    const stillParked = new Set((parkedRun?.parked ?? []).map((c) => c.tool_call_id));
    const now = this.clock.now();
    const orphans = batch.filter((m) => {
      if (m.message_type !== 'tool_call_message') return false;
      const id = String((m.payload.tool_call as { tool_call_id?: string })?.tool_call_id);
      return !answered.has(id) && !stillParked.has(id);
    });
    await this.repo.append(
      run.agent_id,
      orphans.map((m) => {
        const call = m.payload.tool_call as { tool_call_id: string; name: string };
        return newMessageRow(
          this.ids.prefixed('message'),
          run,
          'tool_return_message',
          {
            tool_return: OUTCOME_UNKNOWN,
            status: 'error',
            tool_call_id: call.tool_call_id,
            name: call.name,
            error_type: 'ToolError',
          },
          m.step_id,
          now,
        );
      }),
    );
    await this.repo.finishRun(
      run.id,
      {
        status: 'failed',
        stop_reason: 'error',
        usage: run.usage ?? EMPTY_USAGE,
        error: 'interrupted',
      },
      now,
    );
    await this.exec.executor.completeBatch(run.batch_id).catch(() => undefined);
    await this.agents
      .setLastStopReason(run.tenant_id, run.agent_id, 'error')
      .catch(() => undefined);
    this.logger.warn(
      `run ${run.id} was interrupted${orphans.length ? `; ${orphans.length} tool call(s) with unknown outcome` : ''}`,
    );
  }

  /**
   * Stop taking batches; running ones end at their next step boundary within the grace period,
   * the rest are aborted and marked interrupted. Queued runs stay `created` for the next boot.
   */
  async beforeApplicationShutdown(signal?: string): Promise<void> {
    this.messaging.mailbox.close();
    this.messaging.releaseQueuedWaiters();
    this.processor.stopAllAtBoundary();
    const graceMs = this.config.processing.shutdown_grace_seconds * 1000;
    const idle = this.messaging.mailbox.whenIdle();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      idle.then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      for (const id of this.processor.activeRunIds()) this.processor.abort(id, 'interrupted');
      await Promise.race([idle, new Promise((r) => setTimeout(r, 2000).unref())]);
    }
    if (signal === 'SIGTERM' || signal === 'SIGINT') {
      // Nest re-raises the signal after its hooks; answering it here makes the exit status 0
      process.once(signal, () => process.exit(0));
    }
  }
}
