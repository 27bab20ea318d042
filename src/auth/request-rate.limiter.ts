import { Inject, Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import type { NextFunction, Request, Response } from 'express';
import { CLOCK } from '../common/clock';
import { DomainError } from '../common/domain-error';
import { toErrorBody } from '../common/domain-error.filter';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { Bucket, takeToken } from '../core/limits/token-bucket';
import { clientOf } from '../core/net/host-policy';
import type { Clock } from '../core/ports';
import { ApiKeysService } from './api-keys.service';

/** Probes of the operator are never limited. */
const UNLIMITED = new Set(['/v1/health', '/v1/health/']);

/** Clients (`clientOf`) whose unauthenticated buckets are kept (the least recent go first). */
const MAX_ADDRESSES = 10_000;

/**
 * Request rate per API key (`rate_limit.*`): a token bucket per configured key (open mode: one), checked
 * before the body is read; past it 429 RATE_LIMITED with Retry-After. Requests without a valid key (401s,
 * and the routes whose credential is not a key: decision URLs, `/metrics`) have a bucket per client
 * address (an IPv6 address's /64: `clientOf`), so varying the key or the address within its block cannot
 * mint buckets and one flooding client does not starve another's decision URL. (Behind a proxy the
 * address is the proxy's.) Counted per process: N instances allow up to N times the rate.
 */
@Injectable()
export class RequestRateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly byAddress = new LRUCache<string, Bucket>({ max: MAX_ADDRESSES });

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly keys: ApiKeysService,
  ) {}

  readonly handle = (req: Request, res: Response, next: NextFunction): void => {
    const { requests_per_second: rate, burst } = this.config.rate_limit;
    if (rate === 0 || UNLIMITED.has(req.path)) return next();
    const key = this.keys.principalFor(ApiKeysService.keyFromHeaders(req.headers))?.key;
    const address = clientOf(req.socket.remoteAddress ?? '');
    const bucket = key === undefined ? this.byAddress.get(address) : this.buckets.get(key);
    const taken = takeToken(bucket, rate, burst, this.clock.now());
    if (key === undefined) this.byAddress.set(address, taken.bucket);
    else this.buckets.set(key, taken.bucket);
    if (taken.allowed) return next();
    const seconds = Math.max(1, Math.ceil(taken.retryAfterMs / 1000));
    const { status, body } = toErrorBody(
      new DomainError(
        'too_many_requests',
        'RATE_LIMITED',
        `more than ${rate} requests per second (burst ${burst}) for this API key${key === undefined ? ' (none: this address)' : ''}; retry after ${seconds} s`,
        { retry_after_seconds: seconds, requests_per_second: rate, burst },
      ),
    );
    res.setHeader('Retry-After', String(seconds));
    res.status(status).json(body);
  };
}
