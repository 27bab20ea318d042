import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Subscription } from 'rxjs';
import { CLOCK } from '../common/clock';
import { ID_GENERATOR } from '../common/ids';
import { RunEvent, RunEventsBus } from '../common/run-events';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG, OUTBOUND_HOST_POLICY } from '../config/config.module';
import { HostPolicy } from '../core/net/host-policy';
import type { Clock, IdGenerator } from '../core/ports';
import {
  retryDelayMs,
  runWebhookEvent,
  SIGNATURE_HEADER,
  signatureFor,
  WebhookEvent,
} from '../core/webhooks/webhook-rules';
import type { ConsentRequestEntity } from '../permissions/consent.entities';
import { toRequestFrame, toResolvedFrame } from '../permissions/consent.mappers';
import { ConsentResolved, PermissionBrokerService } from '../permissions/permission-broker.service';
import { SECRET_CIPHER, SecretCipher } from '../secrets/secret-cipher';
import { postOnce, type PostOutcome } from '../tools/http-tool.invoker';
import {
  WebhookDecisionTokenEntity,
  WebhookDeliveryEntity,
  WebhookEntity,
  webhookSecretAad,
} from './webhook.entities';
import { WebhooksRepository } from './webhooks.repository';
import { hashToken, newDecisionToken } from './webhooks.service';

/** A sealed secret the configured key does not open: nothing can be signed. */
class SecretUnreadable extends Error {}

const MAX_ERROR_TEXT = 500;
const PRUNE_EVERY_MS = 3_600_000;

/**
 * Turns consent and run events into signed webhook deliveries: stored first (one per webhook and event,
 * whichever instance sees it), then sent by any instance that claims them, retried with backoff.
 * It listens where the WebSocket gateway listens (the broker and the run-events bus).
 */
@Injectable()
export class WebhookDispatcher
  implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown
{
  private readonly logger = new Logger('Webhooks');
  private readonly unsubscribe: (() => void)[] = [];
  private runEvents: Subscription | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** The look for due work under way (one at a time per instance); `again`: look once more after it. */
  private looking: Promise<void> | null = null;
  private again = false;
  /** Attempts open now, per tenant, and all of them (webhooks.max_in_flight[_per_tenant]). */
  private readonly openPerTenant = new Map<string, number>();
  private readonly open = new Set<Promise<void>>();
  /**
   * The deliveries those attempts send: never started twice here, also when the clock passes the claim
   * (`claim_seconds`) before the attempt is recorded.
   */
  private readonly openIds = new Set<string>();
  /** Attempts started so far (deliverDue answers how many it saw). */
  private started = 0;
  /** deliverDue callers, woken once nothing is open and nothing is due. */
  private idleWaiters: (() => void)[] = [];
  /** Events being stored: shutdown waits for them, or an event seen just before it would be lost. */
  private readonly storing = new Set<Promise<void>>();
  private lastPrune = 0;
  private stopped = false;

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly broker: PermissionBrokerService,
    private readonly bus: RunEventsBus,
    private readonly http: HttpAdapterHost,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(OUTBOUND_HOST_POLICY) private readonly policy: HostPolicy,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    @Inject(SECRET_CIPHER) private readonly cipher: SecretCipher | null,
  ) {}

  onModuleInit(): void {
    this.unsubscribe.push(
      this.broker.onRequest((r) => this.store(this.onConsentRequest(r))),
      this.broker.onDecision((e) => this.store(this.onConsentResolved(e))),
      this.broker.onCancelled((e) => this.store(this.onConsentResolved(e))),
    );
    // the instance that ran the run stores its delivery; the unique (webhook, event) row covers any overlap
    this.runEvents = this.bus.local$.subscribe((e) => {
      if (e.type === 'run.completed') this.store(this.onRunCompleted(e));
    });
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => this.kick(), this.config.webhooks.poll_interval_seconds * 1000);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.unsubscribe.forEach((u) => u());
    this.runEvents?.unsubscribe();
    if (this.timer) clearInterval(this.timer);
    await Promise.all(this.storing);
    await this.looking;
    await Promise.all(this.open);
    this.wakeIdle();
  }

  private store(p: Promise<void>): void {
    const kept = p.catch((e: unknown) => this.logger.error(`webhooks: ${String(e)}`));
    this.storing.add(kept);
    void kept.finally(() => this.storing.delete(kept));
  }

  // ------------------------------------------------------------ events in

  private async onConsentRequest(r: ConsentRequestEntity): Promise<void> {
    await this.enqueue(r.tenantId, 'consent.request', `consent.request:${r.id}`, (webhook) => {
      const token = newDecisionToken();
      const row: WebhookDecisionTokenEntity = {
        tokenHash: hashToken(token),
        tenantId: r.tenantId,
        webhookId: webhook.id,
        requestId: r.id,
        expiresAt: r.expiresAt,
        usedAt: null,
      };
      return {
        data: {
          request: toRequestFrame(r),
          decision_url: `${this.baseUrl()}/v1/webhooks/decisions/${token}`,
          decision_url_expires_at: new Date(r.expiresAt).toISOString(),
        },
        token: row,
      };
    });
  }

  private async onConsentResolved(e: ConsentResolved): Promise<void> {
    const { type: _type, ...frame } = toResolvedFrame(e);
    await this.enqueue(e.tenantId, 'consent.resolved', `consent.resolved:${e.requestId}`, () => ({
      data: { ...frame, agent_id: e.agentId, run_id: e.runId, tool_name: e.toolName },
    }));
  }

  private async onRunCompleted(e: RunEvent): Promise<void> {
    const event = runWebhookEvent(e.data.status);
    await this.enqueue(e.tenantId, event, `run:${e.runId}`, () => ({
      data: {
        run_id: e.runId,
        agent_id: e.agentId,
        status: e.data.status ?? null,
        stop_reason: e.data.stop_reason ?? null,
        usage: e.data.usage ?? null,
        error: e.data.error ?? null,
      },
    }));
  }

  private async enqueue(
    tenantId: string,
    event: WebhookEvent,
    eventKey: string,
    build: (w: WebhookEntity) => {
      data: Record<string, unknown>;
      token?: WebhookDecisionTokenEntity;
    },
  ): Promise<void> {
    // only this tenant's webhooks: an event never reaches another tenant's URL
    const targets = (await this.repo.subscriptions(tenantId)).filter((w) =>
      w.events.includes(event),
    );
    if (targets.length === 0) return;
    const now = this.clock.now();
    let added = false;
    for (const w of targets) {
      const id = this.ids.prefixed('delivery');
      const { data, token } = build(w);
      const delivery: WebhookDeliveryEntity = {
        id,
        tenantId,
        webhookId: w.id,
        event,
        eventKey,
        body: JSON.stringify({ id, event, created_at: new Date(now).toISOString(), data }),
        status: 'pending',
        attempts: 0,
        lastStatusCode: null,
        lastError: null,
        nextAttemptAt: now,
        claimedUntil: null,
        createdAt: now,
        lastAttemptAt: null,
      };
      if (await this.repo.enqueue(delivery, token ?? null)) added = true;
    }
    if (added) this.kick();
  }

  // ------------------------------------------------------------ deliveries out

  /**
   * Sends every due delivery this instance can claim and waits until none is open and none is due; returns
   * how many attempts were made meanwhile. Tests call it; the timer and new events only kick.
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
   * that ends frees its slot and kicks again, so one hanging receiver holds one slot, never a batch.
   */
  private kick(): void {
    if (this.stopped) return this.wakeIdle();
    if (this.looking) {
      this.again = true;
      return;
    }
    this.looking = this.fill()
      .catch((e: unknown) => this.logger.error(`webhooks: ${String(e)}`))
      .finally(() => {
        this.looking = null;
        if (this.again) this.kick();
        else if (this.open.size === 0) this.wakeIdle();
      });
  }

  /**
   * Fills this instance's free attempt slots (`webhooks.max_in_flight`) with due deliveries, fairly: a
   * tenant at its share (`max_in_flight_per_tenant`) is skipped, and the free slots go round the tenants
   * with due work, those with the fewest open attempts first (then the oldest due), one slot each per
   * round. So a tenant whose receivers hang holds at most its share, and the next free slot goes to a
   * tenant that has none open rather than to its backlog. Each delivery is claimed (a conditional UPDATE)
   * before it is sent, so instances never send one twice.
   */
  private async fill(): Promise<void> {
    const s = this.config.webhooks;
    for (;;) {
      this.again = false;
      if (this.stopped) return;
      const free = s.max_in_flight - this.open.size;
      if (free <= 0) return; // an attempt's end kicks again
      const openOf = (t: string) => this.openPerTenant.get(t) ?? 0;
      const full = [...this.openPerTenant].filter(([, n]) => n >= s.max_in_flight_per_tenant);
      const now = this.clock.now();
      // enough tenants that some have none open whenever the list is full
      const tenants = await this.repo.dueTenants(
        now,
        2 * s.max_in_flight,
        full.map(([t]) => t),
      );
      tenants.sort((a, b) => openOf(a.tenantId) - openOf(b.tenantId) || a.oldest - b.oldest);
      const share = new Map<string, number>();
      for (let left = free, gave = true; left > 0 && gave;) {
        gave = false;
        for (const t of tenants) {
          const n = share.get(t.tenantId) ?? 0;
          if (left === 0) break;
          if (n >= t.due || openOf(t.tenantId) + n >= s.max_in_flight_per_tenant) continue;
          share.set(t.tenantId, n + 1);
          left--;
          gave = true;
        }
      }
      let startedNow = 0;
      const claimUntil = now + s.claim_seconds * 1000;
      for (const [tenantId, n] of share) {
        const rows = await this.repo.due(tenantId, now, n + openOf(tenantId));
        for (const d of rows.filter((r) => !this.openIds.has(r.id)).slice(0, n))
          if (!this.stopped && (await this.repo.claim(d.id, now, claimUntil))) {
            this.start(d);
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
  private start(d: WebhookDeliveryEntity): void {
    this.started++;
    this.openIds.add(d.id);
    this.openPerTenant.set(d.tenantId, (this.openPerTenant.get(d.tenantId) ?? 0) + 1);
    const p = this.attempt(d)
      .catch((e: unknown) => this.logger.error(`webhooks: ${String(e)}`))
      .finally(() => {
        const n = (this.openPerTenant.get(d.tenantId) ?? 1) - 1;
        if (n > 0) this.openPerTenant.set(d.tenantId, n);
        else this.openPerTenant.delete(d.tenantId);
        this.open.delete(p);
        this.openIds.delete(d.id);
        this.kick();
      });
    this.open.add(p);
  }

  private wakeIdle(): void {
    const waiters = this.idleWaiters.splice(0);
    waiters.forEach((w) => w());
  }

  private async attempt(d: WebhookDeliveryEntity): Promise<void> {
    const s = this.config.webhooks;
    const webhook = await this.repo.findById(d.webhookId);
    if (!webhook) return; // deleted meanwhile: its deliveries went with it
    const ts = Math.floor(this.clock.now() / 1000);
    let sent: PostOutcome;
    try {
      const secret = this.unseal(webhook);
      sent = await postOnce(
        webhook.url,
        {
          'content-type': 'application/json',
          'user-agent': 'rulebound-webhooks/1',
          'x-webhook-id': d.id,
          'x-webhook-event': d.event,
          [SIGNATURE_HEADER]: signatureFor(secret, ts, d.body),
        },
        d.body,
        s.request_timeout_seconds * 1000,
        this.policy,
      );
    } catch (e) {
      // the secret did not unseal (postOnce answers every failure of its own)
      sent = {
        statusCode: null,
        error: e instanceof Error ? e.message : String(e),
        refused: e instanceof SecretUnreadable,
      };
    }
    const { statusCode: code, error: err } = sent;
    // a refused host (the operator's policy) or an unreadable secret is no hiccup: no retry
    const final = sent.refused;
    const attempts = d.attempts + 1;
    const now = this.clock.now();
    const delay =
      err === null || final
        ? null
        : retryDelayMs(attempts, {
            baseMs: s.retry_base_seconds * 1000,
            maxMs: s.retry_max_seconds * 1000,
            maxAttempts: s.max_attempts,
          });
    await this.repo.recordAttempt(d.id, {
      status: err === null ? 'delivered' : delay === null ? 'failed' : 'pending',
      attempts,
      lastStatusCode: code,
      lastError: err?.slice(0, MAX_ERROR_TEXT) ?? null,
      nextAttemptAt: delay === null ? d.nextAttemptAt : now + delay,
      lastAttemptAt: now,
    });
  }

  /** The signing secret; unreadable when the encryption key was removed or changed since creation. */
  private unseal(w: WebhookEntity): string {
    try {
      if (this.cipher)
        return this.cipher.decrypt(w.sealedSecret, webhookSecretAad(w.tenantId, w.id));
    } catch {
      // below: say which, never what
    }
    this.logger.warn(`the secret of webhook ${w.id} does not decrypt with the configured key`);
    throw new SecretUnreadable(
      "the webhook's signing secret does not decrypt with the configured secrets.encryption_key",
    );
  }

  private async pruneNow(): Promise<void> {
    const now = this.clock.now();
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    await this.repo.prune(now - this.config.webhooks.retention_days * 86_400_000);
  }

  /** Where decision URLs point: the configured public URL, else the address this server listens on. */
  private baseUrl(): string {
    if (this.config.webhooks.public_url) return this.config.webhooks.public_url;
    const server = this.http.httpAdapter?.getHttpServer() as Server | undefined;
    const addr = server?.address() as AddressInfo | null | undefined;
    const host = this.config.server.host.includes(':')
      ? `[${this.config.server.host}]`
      : this.config.server.host;
    return `http://${host}:${addr?.port ?? this.config.server.port}`;
  }
}
