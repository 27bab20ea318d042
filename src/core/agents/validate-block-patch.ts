import type { ValidationProblem } from '../rules/validate-tool-rules';
import type { InputLimits } from '../limits';
import type { MemoryBlock } from './agent-record';

/**
 * Validates a PATCH of one memory block over the API (Letta's `core-memory/blocks/{label}`): `value`, `limit`,
 * `description`, `read_only`. The API is the owner's hand, so read_only (which binds the agent's own memory
 * tools) does not stop it; the limit still holds.
 */
export function applyBlockPatch(
  current: MemoryBlock,
  body: unknown,
  limits: Pick<InputLimits, 'max_block_chars'>,
): { block: MemoryBlock | null; problems: ValidationProblem[] } {
  const problems: ValidationProblem[] = [];
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { block: null, problems: [{ path: '$', message: 'must be an object' }] };
  }
  const b = body as Record<string, unknown>;
  const next: MemoryBlock = { ...current };
  if (b.value !== undefined && b.value !== null) {
    if (typeof b.value === 'string') next.value = b.value;
    else problems.push({ path: 'value', message: 'must be a string' });
  }
  if (b.limit !== undefined && b.limit !== null) {
    const max = limits.max_block_chars;
    if (typeof b.limit === 'number' && Number.isInteger(b.limit) && b.limit > 0 && b.limit <= max)
      next.limit = b.limit;
    else
      problems.push({
        path: 'limit',
        message: `must be a whole number from 1 to ${max} (limits.max_block_chars)`,
      });
  }
  if (b.description !== undefined) {
    if (b.description === null || typeof b.description === 'string')
      next.description = b.description;
    else problems.push({ path: 'description', message: 'must be a string or null' });
  }
  if (b.read_only !== undefined && b.read_only !== null) {
    if (typeof b.read_only === 'boolean') next.read_only = b.read_only;
    else problems.push({ path: 'read_only', message: 'must be true or false' });
  }
  if (problems.length === 0 && next.value.length > next.limit) {
    problems.push({
      path: 'value',
      message: `is ${next.value.length} characters, over the block's limit of ${next.limit}`,
    });
  }
  return problems.length ? { block: null, problems } : { block: next, problems };
}
