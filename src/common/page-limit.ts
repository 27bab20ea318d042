import { readLimit, type InputLimits } from '../core/limits';
import type { ValidationProblem } from '../core/rules/validate-tool-rules';
import { validationFailed } from './domain-error';
import type { PageBounds } from './list-page';

/**
 * The bounds of a list that takes a `limit` alone (no cursors): `limits.max_page_size` bounds it (a bad
 * one is `400 VALIDATION_FAILED`), and `limits.max_page_bytes` the page's size.
 */
export function pageBounds(
  raw: unknown,
  fallback: number,
  limits: Pick<InputLimits, 'max_page_size' | 'max_page_bytes'>,
): PageBounds {
  const problems: ValidationProblem[] = [];
  const limit = readLimit(raw, fallback, 'max_page_size', limits, problems);
  if (problems.length) throw validationFailed(problems, 'query is invalid');
  return { limit, maxBytes: limits.max_page_bytes };
}
