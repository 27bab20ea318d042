import { validationFailed, type ValidationProblem } from '../common/domain-error';
import { nulBytePaths } from '../core/agents/nul-bytes';
import { countProblem, type InputLimits } from '../core/limits';
import type { StepFeedback } from './entities/step.entity';
import { STEP_FEEDBACK } from './query.dto';

export const STEP_TAG_MAX = 200;

/**
 * `PATCH /v1/steps/{id}/feedback` body `{feedback?, tags?}`, as Letta's server reads it: `feedback` is
 * set to what is given (absent or null clears it), `tags` replace the step's when a non-empty list is given.
 */
export function parseStepFeedback(
  body: unknown,
  limits: Pick<InputLimits, 'max_tags_per_agent'>,
): { feedback: StepFeedback | null; tags: string[] | null } {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw validationFailed([{ path: '', message: 'body must be a JSON object' }]);
  const b = body as Record<string, unknown>;
  // a NUL is refused as everywhere else (PostgreSQL text cannot hold one)
  const problems: ValidationProblem[] = nulBytePaths(b);
  let feedback: StepFeedback | null = null;
  if (b.feedback !== undefined && b.feedback !== null) {
    if (!STEP_FEEDBACK.includes(b.feedback as StepFeedback))
      problems.push({ path: 'feedback', message: 'must be positive, negative or null' });
    else feedback = b.feedback as StepFeedback;
  }
  let tags: string[] | null = null;
  if (b.tags !== undefined && b.tags !== null) {
    if (!Array.isArray(b.tags))
      problems.push({ path: 'tags', message: 'must be a list of strings' });
    else {
      const tooMany = countProblem('tags', b.tags.length, 'max_tags_per_agent', limits);
      if (tooMany) problems.push(tooMany);
      b.tags.forEach((t, i) => {
        if (typeof t !== 'string' || t.length === 0 || t.length > STEP_TAG_MAX)
          problems.push({
            path: `tags[${i}]`,
            message: `must be a text of 1 to ${STEP_TAG_MAX} characters`,
          });
      });
      if (b.tags.length > 0) tags = [...new Set(b.tags as string[])];
    }
  }
  if (problems.length) throw validationFailed(problems);
  return { feedback, tags };
}
