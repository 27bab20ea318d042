import type { WebhookDeliveryEntity, WebhookEntity } from './webhook.entities';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** A webhook over the API: never its secret (shown once, on creation). */
export function toWebhookResponse(w: WebhookEntity) {
  return {
    id: w.id,
    url: w.url,
    events: w.events,
    description: w.description,
    created_at: iso(w.createdAt),
  };
}

export function toDeliveryResponse(d: WebhookDeliveryEntity) {
  return {
    id: d.id,
    webhook_id: d.webhookId,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.lastStatusCode,
    last_error: d.lastError,
    next_attempt_at: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
    last_attempt_at: iso(d.lastAttemptAt),
    created_at: iso(d.createdAt),
  };
}
