import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, ErrorKind } from './domain-error';

const STATUS: Record<ErrorKind, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  gone: 410,
  payload_too_large: 413,
  too_many_requests: 429,
  unavailable: 503,
  bad_gateway: 502,
  not_implemented: 501,
  internal: 500,
};

export interface ErrorBody {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/** Maps any thrown value to the one error shape `{code, message, details}`. */
export function toErrorBody(err: unknown): { status: number; body: ErrorBody } {
  if (err instanceof DomainError) {
    return {
      status: STATUS[err.kind],
      body: { code: err.code, message: err.message, details: err.details },
    };
  }
  if (err instanceof HttpException) {
    const status = err.getStatus();
    const code =
      status === 404
        ? 'NOT_FOUND'
        : status === 413
          ? 'PAYLOAD_TOO_LARGE'
          : status === 401
            ? 'UNAUTHORIZED'
            : `HTTP_${status}`;
    return { status, body: { code, message: err.message, details: {} } };
  }
  // body-parser errors carry `type` and `status`
  const e = err as { type?: string; status?: number; message?: string };
  if (e && e.type === 'entity.too.large') {
    return {
      status: 413,
      body: { code: 'PAYLOAD_TOO_LARGE', message: 'request body is too large', details: {} },
    };
  }
  if (e && e.type === 'entity.parse.failed') {
    return {
      status: 400,
      body: { code: 'MALFORMED_JSON', message: 'request body is not valid JSON', details: {} },
    };
  }
  if (e && typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    return {
      status: e.status,
      body: { code: `HTTP_${e.status}`, message: e.message ?? 'bad request', details: {} },
    };
  }
  return { status: 500, body: { code: 'INTERNAL', message: 'internal error', details: {} } };
}

@Catch()
export class DomainErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') return;
    const res = host.switchToHttp().getResponse<Response>();
    const { status, body } = toErrorBody(exception);
    // An upstream that failed (bad_gateway) is the upstream's problem, answered plainly; not our error,
    // nor is a feature this server does not have (not_implemented), nor a shutdown under way (unavailable).
    const plain =
      exception instanceof DomainError &&
      (exception.kind === 'bad_gateway' ||
        exception.kind === 'not_implemented' ||
        exception.kind === 'unavailable');
    if (status >= 500 && !plain)
      this.logger.error(exception instanceof Error ? exception.stack : String(exception));
    if (res.headersSent) {
      res.end();
      return;
    }
    // Letta's SDK (and others built by Stainless) retry a 5xx unless told not to
    if (exception instanceof DomainError && exception.retry === false)
      res.setHeader('x-should-retry', 'false');
    res.status(status).json(body);
  }
}
