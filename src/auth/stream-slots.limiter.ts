import { Inject, Injectable } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { DomainError } from '../common/domain-error';
import { toErrorBody } from '../common/domain-error.filter';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ApiKeysService } from './api-keys.service';
import { clientOf } from '../core/net/host-policy';

/**
 * Whether a request is answered with a Server-Sent Events stream, as the routes decide it: `/stream`
 * routes always, an agent's `/messages` with `streaming: true`, a conversation's `/messages` unless
 * `streaming: false`. Express matches routes case-insensitively and with a trailing slash, so this does too.
 */
export function answersWithStream(method: string, path: string, body: unknown): boolean {
  if (method !== 'POST') return false;
  const streaming =
    typeof body === 'object' && body !== null
      ? (body as { streaming?: unknown }).streaming
      : undefined;
  if (/^\/v1\/agents\/[^/]+\/messages\/stream\/?$/i.test(path)) return true;
  if (/^\/v1\/(runs|conversations)\/[^/]+\/stream\/?$/i.test(path)) return true;
  if (/^\/v1\/agents\/[^/]+\/messages\/?$/i.test(path)) return streaming === true;
  if (/^\/v1\/conversations\/[^/]+\/messages\/?$/i.test(path)) return streaming !== false;
  return false;
}

/**
 * Open SSE streams per API key (`streaming.max_streams_per_key`; open mode: per client address, `clientOf`), across
 * every streaming route: one key held 2,000 streams (2,000 sockets, each a subscriber of every run event).
 * A slot is taken before the route runs and given back when the response closes; past the bound the
 * answer is 429 TOO_MANY_STREAMS. Requests without a valid key are left to the guard (401). Counted per
 * process, as the WebSocket connections are.
 */
@Injectable()
export class StreamSlotsLimiter {
  private readonly open = new Map<string, number>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly keys: ApiKeysService,
  ) {}

  /** After the body is read: whether a request streams depends on it. */
  readonly handle = (req: Request, res: Response, next: NextFunction): void => {
    if (!answersWithStream(req.method, req.path, req.body)) return next();
    const who = this.keys.principalFor(ApiKeysService.keyFromHeaders(req.headers));
    if (!who) return next();
    // in open mode every caller is one key: count each address apart, so one client cannot starve another
    const slot = this.keys.open ? `open@${clientOf(req.socket.remoteAddress ?? '')}` : who.key;
    const max = this.config.streaming.max_streams_per_key;
    const held = this.open.get(slot) ?? 0;
    if (held >= max) {
      const { status, body } = toErrorBody(
        new DomainError(
          'too_many_requests',
          'TOO_MANY_STREAMS',
          `this API key already has ${max} streams open (streaming.max_streams_per_key); close one first`,
          { max_streams_per_key: max },
        ),
      );
      res.status(status).json(body);
      return;
    }
    this.open.set(slot, held + 1);
    res.once('close', () => {
      const n = (this.open.get(slot) ?? 1) - 1;
      if (n > 0) this.open.set(slot, n);
      else this.open.delete(slot);
    });
    next();
  };
}
