import { createHmac } from 'node:crypto';
import type { ValidationProblem } from '../rules/validate-tool-rules';

/** The events a webhook may subscribe to. */
export const WEBHOOK_EVENTS = [
  'consent.request',
  'consent.resolved',
  'run.completed',
  'run.failed',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface WebhookLimits {
  url_max_length: number;
  secret_min_length: number;
  secret_max_length: number;
}

export interface WebhookInput {
  url: string;
  events: WebhookEvent[];
  /** null: the server generates one (returned once, on creation). */
  secret: string | null;
  description: string | null;
}

const MAX_DESCRIPTION = 500;

/** Validates a `POST /v1/webhooks` body; problems carry JSON paths. */
/** The fields of a webhook registration; any other is refused. */
export const WEBHOOK_FIELDS = ['url', 'events', 'secret', 'description'] as const;

export function validateWebhookInput(
  raw: unknown,
  limits: WebhookLimits,
): { ok: true; value: WebhookInput } | { ok: false; problems: ValidationProblem[] } {
  const problems: ValidationProblem[] = [];
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return { ok: false, problems: [{ path: '$', message: 'must be a JSON object' }] };
  const b = raw as Record<string, unknown>;
  for (const k of Object.keys(b))
    if (!(WEBHOOK_FIELDS as readonly string[]).includes(k))
      problems.push({ path: k, message: 'is not a webhook field' });

  let url = '';
  if (typeof b.url !== 'string' || b.url.length === 0)
    problems.push({ path: 'url', message: 'is required: an http:// or https:// URL' });
  else if (b.url.length > limits.url_max_length)
    problems.push({ path: 'url', message: `must be at most ${limits.url_max_length} characters` });
  else {
    const why = urlProblem(b.url);
    if (why) problems.push({ path: 'url', message: why });
    else url = b.url;
  }

  const events: WebhookEvent[] = [];
  if (!Array.isArray(b.events) || b.events.length === 0)
    problems.push({
      path: 'events',
      message: `must be a non-empty list of ${WEBHOOK_EVENTS.join(', ')}`,
    });
  else
    b.events.forEach((e, i) => {
      if (!(WEBHOOK_EVENTS as readonly unknown[]).includes(e))
        problems.push({
          path: `events[${i}]`,
          message: `must be one of ${WEBHOOK_EVENTS.join(', ')}`,
        });
      else if (!events.includes(e as WebhookEvent)) events.push(e as WebhookEvent);
    });

  let secret: string | null = null;
  if (b.secret !== undefined && b.secret !== null) {
    if (
      typeof b.secret !== 'string' ||
      b.secret.length < limits.secret_min_length ||
      b.secret.length > limits.secret_max_length
    )
      problems.push({
        path: 'secret',
        message: `must be a string of ${limits.secret_min_length} to ${limits.secret_max_length} characters`,
      });
    else secret = b.secret;
  }

  let description: string | null = null;
  if (b.description !== undefined && b.description !== null) {
    if (typeof b.description !== 'string' || b.description.length > MAX_DESCRIPTION)
      problems.push({
        path: 'description',
        message: `must be a string of at most ${MAX_DESCRIPTION} characters`,
      });
    else description = b.description;
  }
  return problems.length > 0
    ? { ok: false, problems }
    : { ok: true, value: { url, events, secret, description } };
}

function urlProblem(raw: string): string | null {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'is not a URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return 'must be an http:// or https:// URL';
  if (u.username || u.password) return 'must not carry credentials (sign with the secret instead)';
  if (raw.includes('\u0000')) return 'must not contain NUL';
  return null;
}

/**
 * The wait before attempt `attempt + 1` after `attempt` failed ones (1-based): exponential from `baseMs`,
 * capped at `maxMs`; null once `maxAttempts` are spent.
 */
export function retryDelayMs(
  attempt: number,
  policy: { baseMs: number; maxMs: number; maxAttempts: number },
): number | null {
  if (attempt >= policy.maxAttempts) return null;
  return Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1));
}

/** The name of the header carrying the signature. */
export const SIGNATURE_HEADER = 'x-webhook-signature';

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>` (the timestamp is signed with the body, so
 * a receiver can refuse replays older than it accepts).
 */
export function signatureFor(secret: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${timestampSeconds}.${body}`).digest('hex');
  return `t=${timestampSeconds},v1=${mac}`;
}

/** The webhook event a finished run is delivered as. */
export function runWebhookEvent(status: unknown): WebhookEvent {
  return status === 'failed' ? 'run.failed' : 'run.completed';
}
