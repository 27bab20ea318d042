import { Logger } from '@nestjs/common';
import type { WebhookSettings } from '../config/app-config';
import { type DueTenant, fairFill } from '../core/limits/fair-fill';
import type { Clock } from '../core/ports';
import { retryDelayMs } from '../core/webhooks/webhook-rules';
import type { PostOutcome } from '../tools/http-tool.invoker';
import type { Attempt, StoredDelivery } from './delivery-queue';

const MAX_ERROR_TEXT = 500;
const PRUNE_EVERY_MS = 3_600_000;

/** Where a pump's rows are stored (a `DeliveryQueue` and what the feature writes beside an attempt). */
export interface DeliveryStore<R extends StoredDelivery> {
  dueTenants(now: number, limit: number, except: readonly string[]): Promise<DueTenant[]>;
  claimDue(
    tenantId: string,
    now: number,
    limit: number,
    until: number,
    skip: readonly string[],
  ): Promise<R[]>;
  /** `sentAt`: when the attempt began. */
  recordAttempt(row: R, attempt: Attempt, sentAt: number): Promise<void>;
  /** Finished rows created before `before`. */
  prune(before: number): Promise<void>;
}

export interface PumpOptions<R extends StoredDelivery> {
  /** For the log. */
  name: string;
  store: DeliveryStore<R>;
  /** One attempt: what the target answered; null: nothing to send any more (the row's target is gone). */
  send(row: R): Promise<PostOutcome | null>;
  /** Attempts open at once on this instance, and one tenant's share of them. */
  maxInFlight: number;
  perTenant: number;
  /** Retries, claims, polling and retention (`webhooks.*`). */
  settings: WebhookSettings;
  clock: Clock;
}

/**
 * Sends stored deliveries (webhook deliveries, run callbacks): any instance claims due rows and posts
 * them, retried with backoff until `max_attempts`. At most `maxInFlight` attempts are open here, one
 * tenant's at most `perTenant`, and free slots go fairly (`fairFill`): a tenant whose targets hang holds
 * its share, never another tenant's turn. No batch waits for its slowest: an attempt that ends frees its
 * slot and looks again. Rows survive restarts: a timer (and `kick`) finds what is due.
 */
export class DeliveryPump<R extends StoredDelivery> {
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | null = null;
  /** The look for due work under way (one at a time per instance); `again`: look once more after it. */
  private looking: Promise<void> | null = null;
  private again = false;
  private readonly open = new Set<Promise<void>>();
  /**
   * The rows those attempts send, per tenant: never started twice here, also when the clock passes the
   * claim (`claim_seconds`) before the attempt is recorded.
   */
  private readonly openIds = new Map<string, Set<string>>();
  /** Attempts started so far (deliverDue answers how many it saw). */
  private started = 0;
  /** deliverDue callers, woken once nothing is open and nothing is due. */
  private idleWaiters: (() => void)[] = [];
  private lastPrune = 0;
  private stopped = false;

  constructor(private readonly o: PumpOptions<R>) {
    this.logger = new Logger(o.name);
  }

  /** Polls for due rows (rows left by a restart, retries whose time came) and looks once now. */
  start(): void {
    this.timer = setInterval(() => this.kick(), this.o.settings.poll_interval_seconds * 1000);
    this.timer.unref();
    this.kick();
  }

  /** No new attempt starts; the open ones end (their rows are recorded). What is due stays stored. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.looking;
    await Promise.all(this.open);
    this.wakeIdle();
  }

  /**
   * Sends every due row this instance can claim and waits until none is open and none is due; returns
   * how many attempts were made meanwhile. Tests call it; the timer and new rows only kick.
   */
  async deliverDue(): Promise<number> {
    const before = this.started;
    const idle = new Promise<void>((r) => this.idleWaiters.push(r));
    this.kick();
    await idle;
    return this.started - before;
  }

  /**
   * Looks for due work now (or, when a look is under way, once more after it). No barrier: an attempt
   * that ends frees its slot and kicks again, so one hanging target holds one slot, never a batch.
   */
  kick(): void {
    if (this.stopped) return this.wakeIdle();
    if (this.looking) {
      this.again = true;
      return;
    }
    this.looking = this.fill()
      .catch((e: unknown) => this.logger.error(String(e)))
      .finally(() => {
        this.looking = null;
        if (this.again) this.kick();
        else if (this.open.size === 0) this.wakeIdle();
      });
  }

  /** Fills this instance's free slots with due rows, `fairFill`'s share of each tenant, each claimed. */
  private async fill(): Promise<void> {
    const { maxInFlight, perTenant, settings } = this.o;
    for (;;) {
      this.again = false;
      if (this.stopped) return;
      const free = maxInFlight - this.open.size;
      if (free <= 0) return; // an attempt's end kicks again
      const openOf = (t: string) => this.openIds.get(t)?.size ?? 0;
      const full = [...this.openIds].filter(([, ids]) => ids.size >= perTenant).map(([t]) => t);
      const now = this.o.clock.now();
      // enough tenants that some have none open whenever the list is full
      const tenants = await this.o.store.dueTenants(now, 2 * maxInFlight, full);
      const share = fairFill(free, tenants, openOf, perTenant);
      let startedNow = 0;
      const claimUntil = now + settings.claim_seconds * 1000;
      for (const [tenantId, n] of share) {
        if (this.stopped) return;
        const skip = [...(this.openIds.get(tenantId) ?? [])];
        for (const row of await this.o.store.claimDue(tenantId, now, n, claimUntil, skip)) {
          this.begin(row);
          startedNow++;
        }
      }
      if (startedNow === 0 && !this.again) {
        await this.pruneNow();
        return;
      }
    }
  }

  /** One attempt in its slot; its end frees the slot and looks for more. */
  private begin(row: R): void {
    this.started++;
    let ids = this.openIds.get(row.tenantId);
    if (!ids) this.openIds.set(row.tenantId, (ids = new Set()));
    ids.add(row.id);
    const p = this.attempt(row)
      .catch((e: unknown) => this.logger.error(String(e)))
      .finally(() => {
        ids.delete(row.id);
        if (ids.size === 0) this.openIds.delete(row.tenantId);
        this.open.delete(p);
        this.kick();
      });
    this.open.add(p);
  }

  private async attempt(row: R): Promise<void> {
    const s = this.o.settings;
    const sentAt = this.o.clock.now();
    const sent = await this.o.send(row);
    if (!sent) return;
    const { statusCode: code, error: err } = sent;
    const attempts = row.attempts + 1;
    const now = this.o.clock.now();
    // a refused host (the operator's policy) is no hiccup: no retry
    const delay =
      err === null || sent.refused
        ? null
        : retryDelayMs(attempts, {
            baseMs: s.retry_base_seconds * 1000,
            maxMs: s.retry_max_seconds * 1000,
            maxAttempts: s.max_attempts,
          });
    await this.o.store.recordAttempt(
      row,
      {
        status: err === null ? 'delivered' : delay === null ? 'failed' : 'pending',
        attempts,
        lastStatusCode: code,
        lastError: err?.slice(0, MAX_ERROR_TEXT) ?? null,
        nextAttemptAt: delay === null ? row.nextAttemptAt : now + delay,
        lastAttemptAt: now,
      },
      sentAt,
    );
  }

  private wakeIdle(): void {
    const waiters = this.idleWaiters.splice(0);
    waiters.forEach((w) => w());
  }

  private async pruneNow(): Promise<void> {
    const now = this.o.clock.now();
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    await this.o.store.prune(now - this.o.settings.retention_days * 86_400_000);
  }
}
