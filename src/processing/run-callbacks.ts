import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG, OUTBOUND_HOST_POLICY } from '../config/config.module';
import { HostPolicy } from '../core/net/host-policy';
import type { Clock } from '../core/ports';
import { DeliveryPump } from '../deliveries/delivery-pump';
import { postOnce } from '../tools/http-tool.invoker';
import type { RunCallbackEntity } from './entities/run-callback.entity';
import { RunCallbacksRepository } from './run-callbacks.repository';

/**
 * Letta's `callback_url` of a request: once its run has ended, a POST of Letta's callback body
 * (`toCallbackBody`) through the http tools' outbound host policy (checked at every attempt), without
 * following redirects; the run shows what the last attempt answered (`callback_sent_at`,
 * `callback_status_code`, `callback_error`).
 *
 * The callback is stored in the transaction that stores the run's end (`RunCallbacksRepository.
 * storeWithEnd`), then sent as webhook deliveries are (`DeliveryPump`): claimed by one instance, retried
 * with backoff (`webhooks.max_attempts`), sent after a crash or a restart. Posts share this instance's
 * slots (`webhooks.callback_max_in_flight`, `_per_tenant`) fairly: a tenant whose target hangs holds its
 * share, never another tenant's turn; its further callbacks wait, stored, in the order their runs ended.
 */
@Injectable()
export class RunCallbacks implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly pump: DeliveryPump<RunCallbackEntity>;

  constructor(
    repo: RunCallbacksRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(OUTBOUND_HOST_POLICY) private readonly policy: HostPolicy,
    @Inject(CLOCK) clock: Clock,
  ) {
    const w = config.webhooks;
    this.pump = new DeliveryPump({
      name: 'RunCallbacks',
      store: {
        dueTenants: (now, limit, except) => repo.queue.dueTenants(now, limit, except),
        claimDue: (...a) => repo.queue.claimDue(...a),
        recordAttempt: (row, attempt, sentAt) => repo.recordAttempt(row, attempt, sentAt),
        prune: (before) => repo.prune(before),
      },
      send: (row) => this.post(row),
      maxInFlight: w.callback_max_in_flight,
      perTenant: w.callback_max_in_flight_per_tenant,
      settings: w,
      clock,
    });
  }

  onApplicationBootstrap(): void {
    this.pump.start();
  }

  /** Posts under way end; callbacks not sent yet stay stored for the next boot (or another instance). */
  async onApplicationShutdown(): Promise<void> {
    await this.pump.stop();
  }

  /** A run's end (and its callback) was stored: look for due callbacks now. */
  kick(): void {
    this.pump.kick();
  }

  /** Sends what is due and waits until nothing is open (tests); answers how many attempts were made. */
  deliverDue(): Promise<number> {
    return this.pump.deliverDue();
  }

  private post(row: RunCallbackEntity) {
    return postOnce(
      row.url,
      { 'content-type': 'application/json', 'user-agent': 'rulebound-callbacks/1' },
      row.body,
      this.config.webhooks.request_timeout_seconds * 1000,
      this.policy,
    );
  }
}
