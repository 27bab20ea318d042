import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { AgentProcessor } from './agent-processor.service';
import { MessagingService } from './messaging.service';
import { ProcessingRepository } from './processing.repository';

/**
 * Recovery at boot and graceful shutdown. At boot this instance takes the agents whose lease is dead
 * (all of them on SQLite, one process), and only those: their runs a crash left `running` end
 * failed/`interrupted` (RunRecovery), queued ones are processed in their order. Another live
 * instance's work is never touched.
 */
@Injectable()
export class ProcessingLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('ProcessingLifecycle');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: ProcessingRepository,
    private readonly messaging: MessagingService,
    private readonly processor: AgentProcessor,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const taken = await this.messaging.takeOrphanedAgents();
    if (taken) this.logger.log(`took ${taken} agent(s) with unfinished runs`);
    this.messaging.startLeaseKeeper();
    // decisions stored before a crash whose continuation was not yet created
    for (const run of await this.repo.allParkedRuns()) {
      await this.messaging.resumeIfDecided(run.tenant_id, run.agent_id);
    }
  }

  /**
   * Stop taking batches; running ones end at their next step boundary within the grace period,
   * the rest are aborted and marked interrupted. Queued runs stay `created` for the next boot.
   */
  async beforeApplicationShutdown(signal?: string): Promise<void> {
    this.messaging.stopLeaseKeeper();
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
    // other instances take this one's agents (and queued runs) at once, not after the lease time
    await this.messaging.releaseAllAgents();
    if (signal === 'SIGTERM' || signal === 'SIGINT') {
      // Nest re-raises the signal after its hooks; answering it here makes the exit status 0
      process.once(signal, () => process.exit(0));
    }
  }
}
