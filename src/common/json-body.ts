import type { NextFunction, Request, RequestHandler, Response } from 'express';
import * as express from 'express';
import { toErrorBody } from './domain-error.filter';
import { badRequest } from './domain-error';

/** Depth of a parsed JSON value, walked iteratively so that hostile nesting cannot overflow the stack. */
export function jsonDepth(value: unknown, stopAt: number): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d > max) max = d;
    if (max > stopAt) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, d + 1]);
  }
  return max;
}

/** The one refusal of JSON nested past `server.json_max_depth` (bodies, agent files, WebSocket frames). */
export function tooDeep(value: unknown, maxDepth: number) {
  return jsonDepth(value, maxDepth) > maxDepth
    ? badRequest('JSON_TOO_DEEP', `JSON nesting deeper than ${maxDepth} levels`)
    : null;
}

/**
 * The JSON body parser with the configured size limit, and a depth check: a plain Nest app accepts
 * any nesting, and later JSON.stringify of it overflows the stack. Errors answer in the one error shape.
 */
export function jsonBodyMiddleware(limitBytes: number, maxDepth: number): RequestHandler[] {
  const parse = express.json({
    limit: limitBytes,
    type: ['application/json', 'application/*+json'],
  });
  const send = (res: Response, err: unknown) => {
    const { status, body } = toErrorBody(err);
    res.status(status).json(body);
  };
  return [
    (req: Request, res: Response, next: NextFunction) => {
      parse(req, res, (err?: unknown) => (err ? send(res, err) : next()));
    },
    (req: Request, res: Response, next: NextFunction) => {
      const deep = req.body === undefined ? null : tooDeep(req.body, maxDepth);
      if (deep) return send(res, deep);
      next();
    },
  ];
}

/**
 * A NUL byte (`%00`) in a path or query value is refused at the edge: PostgreSQL text cannot hold one,
 * so it would otherwise reach the database as a 500 (bodies are checked per field, `nulBytePaths`).
 */
export function nulInUrlMiddleware(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!/%00/i.test(req.originalUrl)) return next();
    const { status, body } = toErrorBody(
      badRequest('VALIDATION_FAILED', 'the URL holds a NUL byte (%00) in its path or query'),
    );
    res.status(status).json(body);
  };
}
