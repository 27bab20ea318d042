import type { ValidationProblem } from '../core/rules/validate-tool-rules';
/**
 * Every failure the API reports is a DomainError with a stable `code`.
 * The HTTP status is chosen at the edge (DomainErrorFilter) from the code's kind, never in the core.
 */
export type ErrorKind =
  | 'bad_request'
  | 'unauthorized'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'unavailable'
  | 'internal';

export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

// One shape for validation problems: the pure validators in src/core define it.
export type { ValidationProblem } from '../core/rules/validate-tool-rules';

export const badRequest = (code: string, message: string, details?: Record<string, unknown>) =>
  new DomainError('bad_request', code, message, details);

export const validationFailed = (problems: ValidationProblem[], message = 'request is invalid') =>
  new DomainError(
    'bad_request',
    'VALIDATION_FAILED',
    `${message}: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`,
    {
      problems,
    },
  );

export const notFound = (what: string, id: string) =>
  new DomainError('not_found', 'NOT_FOUND', `${what} ${JSON.stringify(id)} not found`, { id });

export const conflict = (code: string, message: string, details?: Record<string, unknown>) =>
  new DomainError('conflict', code, message, details);
