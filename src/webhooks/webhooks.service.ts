import { Inject, Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { CLOCK } from '../common/clock';
import {
  badRequest,
  conflict,
  DomainError,
  notFound,
  validationFailed,
} from '../common/domain-error';
import { ID_GENERATOR } from '../common/ids';
import type { PageBounds } from '../common/list-page';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG, OUTBOUND_HOST_POLICY } from '../config/config.module';
import { HostPolicy } from '../core/net/host-policy';
import type { Clock, IdGenerator } from '../core/ports';
import { validateWebhookInput } from '../core/webhooks/webhook-rules';
import { PermissionBrokerService } from '../permissions/permission-broker.service';
import { requireCipher, SECRET_CIPHER, SecretCipher } from '../secrets/secret-cipher';
import { hostRefusal } from '../tools/http-tool.invoker';
import { WebhookEntity, webhookSecretAad } from './webhook.entities';
import { WebhooksRepository } from './webhooks.repository';

/** 32 random bytes, base64url: the shape of every decision token. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export const newDecisionToken = (): string => randomBytes(32).toString('base64url');
export const hashToken = (token: string): string =>
  createHash('sha256').update(token).digest('hex');

/** Webhooks of a tenant, and decisions that arrive through a webhook's one-time URL. */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly repo: WebhooksRepository,
    private readonly broker: PermissionBrokerService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(OUTBOUND_HOST_POLICY) private readonly policy: HostPolicy,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    @Inject(SECRET_CIPHER) private readonly cipher: SecretCipher | null,
  ) {}

  /** The new webhook, and its signing secret in the clear: the only time it leaves the server. */
  async create(
    tenantId: string,
    raw: unknown,
  ): Promise<{ webhook: WebhookEntity; secret: string }> {
    const limits = this.config.webhooks;
    const v = validateWebhookInput(raw, limits);
    if (!v.ok) throw validationFailed(v.problems, 'webhook is invalid');
    const cipher = requireCipher(this.cipher, 'webhook signing secrets');
    // checked again at every delivery: DNS may change after registration
    const refused = await hostRefusal(new URL(v.value.url), this.policy);
    if (refused)
      throw badRequest('WEBHOOK_HOST_REFUSED', `webhook url refused: ${refused}`, {
        url: v.value.url,
      });
    const id = this.ids.prefixed('webhook');
    const secret = v.value.secret ?? `whsec_${randomBytes(24).toString('base64url')}`;
    const webhook: WebhookEntity = {
      id,
      tenantId,
      url: v.value.url,
      events: v.value.events,
      sealedSecret: cipher.encrypt(secret, webhookSecretAad(tenantId, id)),
      description: v.value.description,
      createdAt: this.clock.now(),
    };
    await this.repo.insertWebhook(webhook);
    return { webhook, secret };
  }

  list(tenantId: string): Promise<WebhookEntity[]> {
    return this.repo.listForTenant(tenantId);
  }

  async get(tenantId: string, id: string): Promise<WebhookEntity> {
    const w = await this.repo.find(tenantId, id);
    if (!w) throw notFound('webhook', id);
    return w;
  }

  async remove(tenantId: string, id: string): Promise<WebhookEntity> {
    const w = await this.get(tenantId, id);
    await this.repo.deleteWebhook(tenantId, id);
    return w;
  }

  async deliveries(tenantId: string, id: string, page: PageBounds) {
    await this.get(tenantId, id);
    return this.repo.deliveriesOf(tenantId, id, page);
  }

  /**
   * A decision through a one-time URL. The token is taken by the first attempt that reaches the broker
   * (so two at once cannot both decide) and given back when the broker refuses it and the request is still
   * pending. The request's own rules (first decision wins, expiry) apply as on every channel.
   */
  async decideByToken(token: string, body: unknown) {
    if (!TOKEN.test(token)) throw notFound('decision URL', token.slice(0, 64));
    const hash = hashToken(token);
    const row = await this.repo.findToken(hash);
    if (!row) throw notFound('decision URL', token);
    if (row.usedAt !== null) throw used();
    if (this.clock.now() >= row.expiresAt)
      throw new DomainError(
        'gone',
        'DECISION_URL_EXPIRED',
        'this decision URL has expired (the request timed out)',
        { request_id: row.requestId },
      );
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw validationFailed([
        { path: '$', message: 'must be a JSON object {decision, seconds?, constraint?, reason?}' },
      ]);
    if (!(await this.repo.useToken(hash, this.clock.now()))) throw used();
    try {
      return await this.broker.decide(
        row.tenantId,
        row.requestId,
        body as Record<string, unknown>,
        'webhook',
      );
    } catch (e) {
      // a refusal that leaves the request pending (an invalid body, 409 GRANT_LIMIT, a failed write) gives
      // the URL back: only a decision made, or the request's end, uses it up
      const now = await this.broker.getRequest(row.tenantId, row.requestId).catch(() => null);
      if (now?.status === 'pending') await this.repo.releaseToken(hash);
      throw e;
    }
  }
}

const used = () =>
  conflict('DECISION_URL_USED', 'this decision URL has already been used (it works once)');
