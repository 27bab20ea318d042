import type { ValidationProblem } from '../core/rules/validate-tool-rules';
/**
 * Every failure the API reports is a DomainError with a stable `code`.
 * The HTTP status is chosen at the edge (DomainErrorFilter) from the code's kind, never in the core.
 */
export type ErrorKind =
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'gone'
  | 'payload_too_large'
  | 'too_many_requests'
  | 'unavailable'
  | 'bad_gateway'
  | 'not_implemented'
  | 'internal';

export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    /** false: sending the request again would repeat what it did (answered with `x-should-retry: false`). */
    readonly retry?: false,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

// One shape for validation problems: the pure validators in src/core define it.
export type { ValidationProblem } from '../core/rules/validate-tool-rules';

export const badRequest = (code: string, message: string, details?: Record<string, unknown>) =>
  new DomainError('bad_request', code, message, details);

/** Problems one answer names (`details.problems`); how many more there were is `details.more_problems`. */
export const MAX_REPORTED_PROBLEMS = 20;

/**
 * A request with problems: `VALIDATION_FAILED`, or `LIMIT_EXCEEDED` when a count passed a configured bound
 * (`details.limits` names the settings, e.g. `limits.max_tags_per_agent`).
 */
export const validationFailed = (
  problems: ValidationProblem[],
  message = 'request is invalid',
  /** Problems found beside these and not listed (an error's `more_problems`, re-raised elsewhere). */
  unlisted = 0,
) => {
  const limits = [...new Set(problems.flatMap((p) => (p.limit ? [p.limit] : [])))];
  // the first ones only: a 900 KB body of bad items named one line each was a 139 MB answer
  const shown = problems.slice(0, MAX_REPORTED_PROBLEMS);
  const more = problems.length - shown.length + unlisted;
  return new DomainError(
    'bad_request',
    limits.length ? 'LIMIT_EXCEEDED' : 'VALIDATION_FAILED',
    `${message}: ${shown.map((p) => `${p.path} ${p.message}`).join('; ')}${more ? `; and ${more} more` : ''}`,
    {
      problems: shown,
      ...(limits.length ? { limits } : {}),
      ...(more ? { more_problems: more } : {}),
    },
  );
};

export const notFound = (what: string, id: string) =>
  new DomainError('not_found', 'NOT_FOUND', `${what} ${JSON.stringify(id)} not found`, { id });

export const conflict = (code: string, message: string, details?: Record<string, unknown>) =>
  new DomainError('conflict', code, message, details);
