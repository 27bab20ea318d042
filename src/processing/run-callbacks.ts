import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG, OUTBOUND_HOST_POLICY } from '../config/config.module';
import { HostPolicy } from '../core/net/host-policy';
import type { Clock } from '../core/ports';
import { postOnce } from '../tools/http-tool.invoker';
import type { RunEntity } from './entities/run.entity';
import { ProcessingRepository } from './processing.repository';
import { runMetadata } from './run-error';

const MAX_ERROR_TEXT = 500;

/**
 * Letta's `callback_url` of a request: once its run has ended (and its end is stored), one POST of
 * Letta's callback body `{job_id, status, completed_at, metadata}` (with `run_id`, `agent_id` and
 * `stop_reason`), through the http tools' outbound host policy, without following redirects; what it
 * answered is stored on the run (`callback_sent_at`, `callback_status_code`, `callback_error`). One attempt,
 * as Letta's: a target that must not miss a run registers a webhook (signed, retried).
 */
@Injectable()
export class RunCallbacks implements OnApplicationShutdown {
  private readonly logger = new Logger('RunCallbacks');
  private readonly sending = new Set<Promise<void>>();

  constructor(
    private readonly repo: ProcessingRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(OUTBOUND_HOST_POLICY) private readonly policy: HostPolicy,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /** Calls the run's callback in the background (the run is as it ended). */
  send(run: RunEntity): void {
    const url = run.input.callback_url;
    if (!url) return;
    const p = this.call(run, url).catch((e: unknown) =>
      this.logger.error(`callback of run ${run.id}: ${String(e)}`),
    );
    this.sending.add(p);
    void p.finally(() => this.sending.delete(p));
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.sending);
  }

  private async call(run: RunEntity, url: string): Promise<void> {
    const body = JSON.stringify({
      job_id: run.id,
      run_id: run.id,
      agent_id: run.agent_id,
      status: run.status,
      stop_reason: run.stop_reason,
      completed_at: run.completed_at === null ? null : new Date(run.completed_at).toISOString(),
      metadata: runMetadata(run) ?? {},
    });
    const sentAt = this.clock.now();
    const sent = await postOnce(
      url,
      { 'content-type': 'application/json', 'user-agent': 'rulebound-callbacks/1' },
      body,
      this.config.webhooks.request_timeout_seconds * 1000,
      this.policy,
    );
    await this.repo.recordCallback(run.id, {
      sent_at: sentAt,
      status_code: sent.statusCode,
      error: sent.error?.slice(0, MAX_ERROR_TEXT) ?? null,
    });
  }
}
