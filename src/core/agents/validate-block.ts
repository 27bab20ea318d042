import type { ValidationProblem } from '../rules/validate-tool-rules';
import { countProblem, type InputLimits } from '../limits';
import { DEFAULT_BLOCK_LIMIT, type MemoryBlock } from './agent-record';

/** A block label's length bound (the column's size). */
export const BLOCK_LABEL_MAX = 200;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A block tag's length (as an agent's or a tool's). */
const MAX_TAG = 200;
type BlockLimits = Pick<InputLimits, 'max_block_chars' | 'max_tags_per_agent'>;

/**
 * Letta's block `tags` (a list of strings, at most `limits.max_tags_per_agent`, as an agent's): the tags
 * without repeats, null when not given or null, undefined when invalid (the problems pushed).
 */
function parseBlockTags(
  v: unknown,
  path: string,
  limits: BlockLimits,
  problems: ValidationProblem[],
): string[] | null | undefined {
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v)) return void problems.push({ path, message: 'must be a list of strings' });
  const tooMany = countProblem(path, v.length, 'max_tags_per_agent', limits);
  if (tooMany) return void problems.push(tooMany);
  const bad = v.findIndex((t) => typeof t !== 'string' || t === '' || t.length > MAX_TAG);
  if (bad >= 0)
    return void problems.push({
      path: `${path}[${bad}]`,
      message: `must be a string of 1 to ${MAX_TAG} characters`,
    });
  return [...new Set(v as string[])];
}

const limitMessage = (max: number) =>
  `must be a whole number from 1 to ${max} (limits.max_block_chars)`;

/**
 * One new block (Letta's CreateBlock: label, value, limit, description, read_only, metadata), at `at`
 * (`memory_blocks[0]`, or '' for `POST /v1/blocks/`). Null with the problems reported through `bad`.
 */
export function parseNewBlock(
  b: unknown,
  at: string,
  limits: BlockLimits,
  /** `limit`: the setting a count passed (a LIMIT_EXCEEDED problem). */
  bad: (path: string, message: string, limit?: string) => void,
): Omit<MemoryBlock, 'id'> | null {
  const path = (field: string) => (at ? `${at}.${field}` : field);
  if (!isObj(b)) {
    bad(at || '$', 'must be an object');
    return null;
  }
  const label = b.label;
  const value = b.value ?? '';
  // Letta's default, within the operator's bound (a smaller limits.max_block_chars is the default then)
  const limit = b.limit ?? Math.min(DEFAULT_BLOCK_LIMIT, limits.max_block_chars);
  const description = b.description ?? null;
  const read_only = b.read_only ?? false;
  const metadata = b.metadata ?? null;
  const hidden = b.hidden ?? null;
  let ok = true;
  const fail = (field: string, message: string) => {
    ok = false;
    bad(path(field), message);
  };
  if (typeof label !== 'string' || label.trim() === '' || label.length > BLOCK_LABEL_MAX)
    fail('label', `is required (a non-empty string of at most ${BLOCK_LABEL_MAX} characters)`);
  if (typeof value !== 'string') fail('value', 'must be a string');
  const max = limits.max_block_chars;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > max)
    fail('limit', limitMessage(max));
  else if (typeof value === 'string' && value.length > limit)
    fail('value', `is ${value.length} characters, over the block's limit of ${limit}`);
  if (description !== null && typeof description !== 'string')
    fail('description', 'must be a string');
  if (typeof read_only !== 'boolean') fail('read_only', 'must be true or false');
  if (metadata !== null && !isObj(metadata)) fail('metadata', 'must be an object or null');
  if (hidden !== null && typeof hidden !== 'boolean') fail('hidden', 'must be true, false or null');
  const tagProblems: ValidationProblem[] = [];
  const tags = parseBlockTags(b.tags, path('tags'), limits, tagProblems);
  for (const t of tagProblems) {
    ok = false;
    bad(t.path, t.message, t.limit);
  }
  if (!ok) return null;
  return {
    label: label as string,
    value: value as string,
    limit: limit as number,
    description: description as string | null,
    read_only: read_only as boolean,
    metadata: metadata as Obj | null,
    ...(tags?.length ? { tags } : {}),
    ...(hidden !== null ? { hidden: hidden as boolean } : {}),
  };
}

/**
 * Validates a PATCH of one memory block over the API (Letta's BlockUpdate: `value`, `limit`, `label`,
 * `description`, `read_only`, `metadata`). The API is the owner's hand, so read_only (which binds the
 * agent's own memory tools) does not stop it; the limit still holds.
 */
export function applyBlockPatch(
  current: MemoryBlock,
  body: unknown,
  limits: BlockLimits,
): { block: MemoryBlock | null; problems: ValidationProblem[] } {
  const problems: ValidationProblem[] = [];
  if (!isObj(body)) return { block: null, problems: [{ path: '$', message: 'must be an object' }] };
  const b = body;
  const next: MemoryBlock = { ...current };
  if (b.value !== undefined && b.value !== null) {
    if (typeof b.value === 'string') next.value = b.value;
    else problems.push({ path: 'value', message: 'must be a string' });
  }
  if (b.label !== undefined && b.label !== null) {
    if (typeof b.label === 'string' && b.label.trim() !== '' && b.label.length <= BLOCK_LABEL_MAX)
      next.label = b.label;
    else
      problems.push({
        path: 'label',
        message: `must be a non-empty string of at most ${BLOCK_LABEL_MAX} characters`,
      });
  }
  if (b.limit !== undefined && b.limit !== null) {
    const max = limits.max_block_chars;
    if (typeof b.limit === 'number' && Number.isInteger(b.limit) && b.limit > 0 && b.limit <= max)
      next.limit = b.limit;
    else problems.push({ path: 'limit', message: limitMessage(max) });
  }
  // Letta's BlockUpdate sets only what is given not null: null keeps the description and metadata
  if (b.description !== undefined && b.description !== null) {
    if (typeof b.description === 'string') next.description = b.description;
    else problems.push({ path: 'description', message: 'must be a string or null' });
  }
  if (b.read_only !== undefined && b.read_only !== null) {
    if (typeof b.read_only === 'boolean') next.read_only = b.read_only;
    else problems.push({ path: 'read_only', message: 'must be true or false' });
  }
  if (b.metadata !== undefined && b.metadata !== null) {
    if (isObj(b.metadata)) next.metadata = b.metadata;
    else problems.push({ path: 'metadata', message: 'must be an object or null' });
  }
  // `hidden: false` shows a block again
  if (b.hidden !== undefined && b.hidden !== null) {
    if (typeof b.hidden === 'boolean') next.hidden = b.hidden;
    else problems.push({ path: 'hidden', message: 'must be true, false or null' });
  }
  // Letta's BlockUpdate: tags given replace the block's ([] clears them); absent or null keeps them
  const tags = parseBlockTags(b.tags, 'tags', limits, problems);
  if (tags) next.tags = tags;
  if (problems.length === 0 && next.value.length > next.limit) {
    problems.push({
      path: 'value',
      message: `is ${next.value.length} characters, over the block's limit of ${next.limit}`,
    });
  }
  return problems.length ? { block: null, problems } : { block: next, problems };
}
