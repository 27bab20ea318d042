import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG, OUTBOUND_HOST_POLICY } from '../config/config.module';
import { FairSlots } from '../core/limits/fair-slots';
import { HostPolicy } from '../core/net/host-policy';
import type { Clock } from '../core/ports';
import { postOnce } from '../tools/http-tool.invoker';
import type { RunCallback, RunEntity } from './entities/run.entity';
import { ProcessingRepository } from './processing.repository';
import { runMetadata } from './run-error';

const MAX_ERROR_TEXT = 500;

/** One run's callback: what to post where (not the run, whose input may be large). */
interface Callback {
  runId: string;
  url: string;
  body: string;
}

/**
 * Letta's `callback_url` of a request: once its run has ended (and its end is stored), one POST of
 * Letta's callback body `{job_id, status, completed_at, metadata}` (with `run_id`, `agent_id` and
 * `stop_reason`), through the http tools' outbound host policy, without following redirects; what it
 * answered is stored on the run (`callback_sent_at`, `callback_status_code`, `callback_error`). One attempt,
 * as Letta's: a target that must not miss a run registers a webhook (signed, retried).
 *
 * Posts share bounded slots (`webhooks.callback_max_in_flight`, `_per_tenant`): a tenant whose target hangs
 * holds its share of sockets, never another tenant's turn. Its further callbacks wait and go in the order
 * their runs ended, since a client waits for each one; only past `callback_max_waiting_per_tenant` (memory)
 * is one not sent, and its run says so.
 */
@Injectable()
export class RunCallbacks implements OnApplicationShutdown {
  private readonly logger = new Logger('RunCallbacks');
  private readonly sending = new Set<Promise<void>>();
  private readonly slots: FairSlots<Callback>;
  private stopped = false;

  constructor(
    private readonly repo: ProcessingRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(OUTBOUND_HOST_POLICY) private readonly policy: HostPolicy,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    const w = config.webhooks;
    this.slots = new FairSlots({
      total: w.callback_max_in_flight,
      perTenant: w.callback_max_in_flight_per_tenant,
      maxWaiting: w.callback_max_waiting_per_tenant,
    });
  }

  /** Calls the run's callback in the background, when a slot is free (the run is as it ended). */
  send(run: RunEntity): void {
    const url = run.input.callback_url;
    if (!url) return;
    const cb: Callback = { runId: run.id, url, body: callbackBody(run) };
    if (this.stopped) return this.notSent(cb, 'the server was shutting down');
    const got = this.slots.push(run.tenant_id, cb);
    if (got === 'start') this.start(run.tenant_id, cb);
    else if (got === 'refused')
      this.notSent(
        cb,
        `${this.config.webhooks.callback_max_waiting_per_tenant} callbacks of this tenant were already waiting (webhooks.callback_max_waiting_per_tenant)`,
      );
  }

  /** Posts under way finish; callbacks still waiting are recorded as not sent. */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    for (const cb of this.slots.drain()) this.notSent(cb, 'the server shut down before its turn');
    await Promise.all(this.sending);
  }

  private start(tenantId: string, cb: Callback): void {
    this.track(
      this.call(cb).finally(() => {
        if (this.stopped) return;
        for (const next of this.slots.done(tenantId)) this.start(next.tenant, next.item);
      }),
    );
  }

  private notSent(cb: Callback, why: string): void {
    this.logger.warn(`callback of run ${cb.runId} not sent: ${why}`);
    this.track(this.record(cb, { sent_at: null, status_code: null, error: `not sent: ${why}` }));
  }

  private track(p: Promise<void>): void {
    const kept = p.catch((e: unknown) => this.logger.error(`run callbacks: ${String(e)}`));
    this.sending.add(kept);
    void kept.finally(() => this.sending.delete(kept));
  }

  private async call(cb: Callback): Promise<void> {
    const sentAt = this.clock.now();
    const sent = await postOnce(
      cb.url,
      { 'content-type': 'application/json', 'user-agent': 'rulebound-callbacks/1' },
      cb.body,
      this.config.webhooks.request_timeout_seconds * 1000,
      this.policy,
    );
    await this.record(cb, { sent_at: sentAt, status_code: sent.statusCode, error: sent.error });
  }

  private record(cb: Callback, outcome: RunCallback): Promise<void> {
    return this.repo.recordCallback(cb.runId, {
      ...outcome,
      error: outcome.error?.slice(0, MAX_ERROR_TEXT) ?? null,
    });
  }
}

function callbackBody(run: RunEntity): string {
  return JSON.stringify({
    job_id: run.id,
    run_id: run.id,
    agent_id: run.agent_id,
    status: run.status,
    stop_reason: run.stop_reason,
    completed_at: run.completed_at === null ? null : new Date(run.completed_at).toISOString(),
    metadata: runMetadata(run) ?? {},
  });
}
