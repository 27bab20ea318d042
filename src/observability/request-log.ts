import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger as Pino } from 'pino';

/** A caller's `x-request-id` is kept when it is short and plain; otherwise one is made. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Probes that would drown the log at info. */
const QUIET = /^\/(v1\/health|metrics)(\/|$)/;
/** Paths whose last segment is a credential (a webhook's one-time decision URL). */
const CREDENTIAL_PATH = /^(\/v1\/webhooks\/decisions\/)[^/]+/;

/**
 * One line per request when its response is finished: request id (also sent back as `x-request-id`),
 * method, path (the query string left out: it may carry values; a decision URL's token redacted),
 * status, duration, tenant.
 */
export function requestLog(pino: Pino) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader('x-request-id', id);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const path = req.originalUrl.split('?')[0].replace(CREDENTIAL_PATH, '$1[redacted]');
      const line = {
        req_id: id,
        method: req.method,
        path,
        status: res.statusCode,
        duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
        tenant: (req as Request & { tenant?: string }).tenant,
      };
      if (res.statusCode >= 500) pino.error(line, 'request');
      else if (QUIET.test(path)) pino.debug(line, 'request');
      else pino.info(line, 'request');
    });
    next();
  };
}
