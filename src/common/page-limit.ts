import { readLimit, type InputLimits } from '../core/limits';
import type { ValidationProblem } from '../core/rules/validate-tool-rules';
import { validationFailed } from './domain-error';

/** A list's `limit` alone (`limits.max_page_size` bounds it); a bad one is `400 VALIDATION_FAILED`. */
export function pageLimit(
  raw: unknown,
  fallback: number,
  limits: Pick<InputLimits, 'max_page_size'>,
): number {
  const problems: ValidationProblem[] = [];
  const n = readLimit(raw, fallback, 'max_page_size', limits, problems);
  if (problems.length) throw validationFailed(problems, 'query is invalid');
  return n;
}
