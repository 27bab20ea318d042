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
  runWebhookEvent,
  SIGNATURE_HEADER,
  signatureFor,
  WebhookEvent,
} from '../core/webhooks/webhook-rules';
import { DeliveryPump } from '../deliveries/delivery-pump';
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

/**
 * Turns consent and run events into signed webhook deliveries: stored first (one per webhook and event,
 * whichever instance sees it), then sent by any instance that claims them, retried with backoff, each
 * tenant in its fair share of attempts (`DeliveryPump`, as run callbacks are sent).
 * It listens where the WebSocket gateway listens (the broker and the run-events bus).
 */
@Injectable()
export class WebhookDispatcher
  implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown
{
  private readonly logger = new Logger('Webhooks');
  private readonly unsubscribe: (() => void)[] = [];
  private runEvents: Subscription | null = null;
  private readonly pump: DeliveryPump<WebhookDeliveryEntity>;
  /** Events being stored: shutdown waits for them, or an event seen just before it would be lost. */
  private readonly storing = new Set<Promise<void>>();

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
  ) {
    this.pump = new DeliveryPump({
      name: 'Webhooks',
      store: {
        dueTenants: (now, limit, except) => repo.deliveries.dueTenants(now, limit, except),
        claimDue: (...a) => repo.deliveries.claimDue(...a),
        recordAttempt: (d, attempt) => repo.deliveries.recordAttempt(d.id, attempt),
        prune: (before) => repo.prune(before),
      },
      send: (d) => this.send(d),
      maxInFlight: config.webhooks.max_in_flight,
      perTenant: config.webhooks.max_in_flight_per_tenant,
      settings: config.webhooks,
      clock,
    });
  }

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
    this.pump.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.unsubscribe.forEach((u) => u());
    this.runEvents?.unsubscribe();
    await Promise.all(this.storing);
    await this.pump.stop();
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
    if (added) this.pump.kick();
  }

  // ------------------------------------------------------------ deliveries out

  /**
   * Sends every due delivery this instance can claim and waits until none is open and none is due; returns
   * how many attempts were made meanwhile. Tests call it; the timer and new events only kick.
   */
  deliverDue(): Promise<number> {
    return this.pump.deliverDue();
  }

  /** One signed attempt; null when the webhook was deleted meanwhile (its deliveries went with it). */
  private async send(d: WebhookDeliveryEntity): Promise<PostOutcome | null> {
    const webhook = await this.repo.findById(d.webhookId);
    if (!webhook) return null;
    const ts = Math.floor(this.clock.now() / 1000);
    try {
      const secret = this.unseal(webhook);
      return await postOnce(
        webhook.url,
        {
          'content-type': 'application/json',
          'user-agent': 'rulebound-webhooks/1',
          'x-webhook-id': d.id,
          'x-webhook-event': d.event,
          [SIGNATURE_HEADER]: signatureFor(secret, ts, d.body),
        },
        d.body,
        this.config.webhooks.request_timeout_seconds * 1000,
        this.policy,
      );
    } catch (e) {
      // the secret did not unseal (postOnce answers every failure of its own): no retry either
      return {
        statusCode: null,
        error: e instanceof Error ? e.message : String(e),
        refused: e instanceof SecretUnreadable,
      };
    }
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
