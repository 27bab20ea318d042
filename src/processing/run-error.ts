import { DomainError, ErrorKind } from '../common/domain-error';
import type { StopReason } from '../core/loop/stop-reason';
import { ModelError } from '../models/model-provider';
import type { RunEntity } from './entities/run.entity';

/**
 * Letta's LettaErrorMessage: what a run that failed on an error (the model's provider, or ours) reports,
 * as the stream's `event: error` frame and the run's `metadata.error`. Other stop reasons (max_steps,
 * budgets, rule violations, cancellation) are not errors in Letta: they have none.
 */
export interface LettaRunError {
  message_type: 'error_message';
  run_id: string;
  error_type: string;
  message: string;
  detail: string | null;
  seq_id: null;
}

/** Letta's error types (letta/server/rest_api/app.py), their user-facing text and HTTP status. */
const ERROR_TYPES: Record<string, { message: string; kind: ErrorKind }> = {
  llm_bad_request: {
    message: 'The request to the LLM model provider was invalid.',
    kind: 'bad_request',
  },
  llm_authentication: {
    message: 'Authentication failed with the LLM model provider.',
    kind: 'unauthorized',
  },
  llm_rate_limit: {
    message:
      'Rate limit exceeded for LLM model provider. Please wait before making another request.',
    kind: 'too_many_requests',
  },
  // Letta answers 500; an upstream failure is a 502 here (as every other provider failure we answer)
  llm_error: { message: 'An error occurred with the LLM request.', kind: 'bad_gateway' },
  internal_error: { message: 'An error occurred during agent execution.', kind: 'internal' },
  // ours: the tenant stores more than quotas.stored_bytes (the run ended before its next model call)
  quota_exceeded: {
    message: 'The tenant has used up its storage quota (quotas.stored_bytes).',
    kind: 'conflict',
  },
};

/** The stop reasons that are errors, and the error type of each when the failure named none. */
const ERROR_STOPS: Partial<Record<StopReason, string>> = {
  llm_api_error: 'llm_error',
  invalid_llm_response: 'llm_error',
  error: 'internal_error',
};

/** The error type of a failure, as the run records it (null: not an error, or the stop's default). */
export function errorTypeOf(e: unknown): string | null {
  if (!(e instanceof ModelError)) return null;
  if (e.kind !== 'llm_api_error' && e.kind !== 'context_window_exceeded') return null;
  if (e.status === 400 || e.status === 404 || e.status === 422) return 'llm_bad_request';
  if (e.status === 401 || e.status === 403) return 'llm_authentication';
  if (e.status === 429) return 'llm_rate_limit';
  return null;
}

type FailedRun = Pick<RunEntity, 'id' | 'stop_reason' | 'error'> & {
  error_type?: string | null;
};

/** The run's error as Letta reports it; null when it did not stop on one. */
export function lettaRunError(run: FailedRun): LettaRunError | null {
  const fallback = run.stop_reason ? ERROR_STOPS[run.stop_reason] : undefined;
  if (!fallback) return null;
  const type = run.error_type && ERROR_TYPES[run.error_type] ? run.error_type : fallback;
  return {
    message_type: 'error_message',
    run_id: run.id,
    error_type: type,
    message: ERROR_TYPES[type].message,
    detail: run.error,
    seq_id: null,
  };
}

/** Letta's Run.metadata: the error of a run that stopped on one. */
export function runMetadata(run: FailedRun): { error: LettaRunError } | null {
  const error = lettaRunError(run);
  return error ? { error } : null;
}

/**
 * What a caller waiting for the run (a non-streaming send) gets when it failed on an error: Letta answers
 * the error's HTTP status instead of the run's messages. Not to be sent again: the message is stored
 * (a retry would add it twice; the SDK retries 429 and 5xx unless told not to).
 */
export function runFailure(run: FailedRun): DomainError | null {
  const error = lettaRunError(run);
  if (!error) return null;
  const details = {
    run_id: run.id,
    stop_reason: run.stop_reason,
    error_type: error.error_type,
    detail: error.detail,
  };
  // stopped by a shutdown (or another instance taking the agent), not broken: 503 INTERRUPTED, not a 500
  if (run.stop_reason === 'error' && run.error === 'interrupted')
    return new DomainError(
      'unavailable',
      'INTERRUPTED',
      `run ${run.id} was interrupted before it finished (the server stopped, or another instance took the agent); GET /v1/runs/${run.id} and its messages tell what it did`,
      details,
      false,
    );
  return new DomainError(
    ERROR_TYPES[error.error_type].kind,
    error.error_type.toUpperCase(),
    error.detail ? `${error.message} ${error.detail}` : error.message,
    details,
    false,
  );
}
