import type { ValidationProblem } from '../rules/validate-tool-rules';

/** Letta's identity types and property types. */
export const IDENTITY_TYPES = ['org', 'user', 'other'] as const;
export type IdentityType = (typeof IDENTITY_TYPES)[number];
export const PROPERTY_TYPES = ['string', 'number', 'boolean', 'json'] as const;

export interface IdentityProperty {
  key: string;
  value: string | number | boolean | Record<string, unknown>;
  type: (typeof PROPERTY_TYPES)[number];
}

/** What a create, upsert or update may set; an update leaves out what it does not change. */
export interface IdentityDraft {
  identifier_key?: string;
  name?: string;
  identity_type?: IdentityType;
  properties?: IdentityProperty[];
  agent_ids?: string[];
}

export interface IdentityLimits {
  /** Properties of one identity. */
  max_properties: number;
  /** The properties as JSON, in bytes. */
  max_properties_bytes: number;
  /** `agent_ids` of one request. */
  max_agents: number;
}

/** identifier_key and name: printable text of 1 … 200 characters. */
const TEXT_MAX = 200;
const PROPERTY_KEY_MAX = 200;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Validates Letta's IdentityCreate / IdentityUpsert (`partial: false`: identifier_key, name and
 * identity_type required) or IdentityUpdate (`partial: true`). Unknown fields are ignored, as Letta's
 * clients send some we do not keep (`project_id`); a non-empty `block_ids` is refused.
 */
export function validateIdentityInput(
  input: unknown,
  limits: IdentityLimits,
  partial: boolean,
): { draft: IdentityDraft | null; problems: ValidationProblem[] } {
  const problems: ValidationProblem[] = [];
  const bad = (path: string, message: string, limit?: string) =>
    problems.push(limit ? { path, message, limit } : { path, message });
  if (!isObj(input))
    return { draft: null, problems: [{ path: '(body)', message: 'must be an object' }] };
  const draft: IdentityDraft = {};
  for (const field of ['identifier_key', 'name'] as const) {
    const v = input[field];
    if (v === undefined || v === null) {
      if (!partial) bad(field, 'is required');
    } else if (typeof v !== 'string' || v.trim() === '' || v.length > TEXT_MAX)
      bad(field, `must be a non-empty text of at most ${TEXT_MAX} characters`);
    else draft[field] = v;
  }
  const type = input.identity_type;
  if (type === undefined || type === null) {
    if (!partial) bad('identity_type', 'is required');
  } else if (!IDENTITY_TYPES.includes(type as IdentityType))
    bad('identity_type', `must be one of ${IDENTITY_TYPES.join(', ')}`);
  else draft.identity_type = type as IdentityType;
  if (input.properties !== undefined && input.properties !== null) {
    const props = validateProperties(input.properties, 'properties', limits, problems);
    if (props) draft.properties = props;
  }
  // said rather than dropped: a client would think its blocks were linked
  if (Array.isArray(input.block_ids) && input.block_ids.length > 0)
    bad('block_ids', 'is not supported: blocks are not linked to identities on this server');
  if (input.agent_ids !== undefined && input.agent_ids !== null) {
    const ids = input.agent_ids;
    if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string'))
      bad('agent_ids', 'must be a list of agent ids');
    else if (ids.length > limits.max_agents)
      bad(
        'agent_ids',
        `has ${ids.length} items; at most ${limits.max_agents} (identities.max_agents_per_request)`,
        'identities.max_agents_per_request',
      );
    else draft.agent_ids = [...new Set(ids as string[])];
  }
  return { draft: problems.length ? null : draft, problems };
}

/** A list of `{key, value, type}` whose value has the type it names; keys unique. */
export function validateProperties(
  input: unknown,
  path: string,
  limits: IdentityLimits,
  problems: ValidationProblem[],
): IdentityProperty[] | null {
  const before = problems.length;
  if (!Array.isArray(input)) {
    problems.push({ path, message: 'must be a list of {key, value, type}' });
    return null;
  }
  if (input.length > limits.max_properties) {
    problems.push({
      path,
      message: `has ${input.length} items; at most ${limits.max_properties} (identities.max_properties)`,
      limit: 'identities.max_properties',
    });
    return null;
  }
  const bytes = Buffer.byteLength(JSON.stringify(input));
  if (bytes > limits.max_properties_bytes) {
    problems.push({
      path,
      message: `is ${bytes} bytes as JSON; at most ${limits.max_properties_bytes} (identities.max_properties_bytes)`,
      limit: 'identities.max_properties_bytes',
    });
    return null;
  }
  const seen = new Set<string>();
  const out: IdentityProperty[] = [];
  input.forEach((p: unknown, i) => {
    const at = `${path}[${i}]`;
    if (!isObj(p)) return problems.push({ path: at, message: 'must be {key, value, type}' });
    const { key, value, type } = p;
    if (typeof key !== 'string' || key === '' || key.length > PROPERTY_KEY_MAX)
      return problems.push({
        path: `${at}.key`,
        message: `must be a non-empty text of at most ${PROPERTY_KEY_MAX} characters`,
      });
    if (seen.has(key)) return problems.push({ path: `${at}.key`, message: 'is given twice' });
    seen.add(key);
    if (!PROPERTY_TYPES.includes(type as IdentityProperty['type']))
      return problems.push({
        path: `${at}.type`,
        message: `must be one of ${PROPERTY_TYPES.join(', ')}`,
      });
    const ok =
      type === 'json'
        ? isObj(value)
        : type === 'number'
          ? typeof value === 'number' && Number.isFinite(value)
          : typeof value === type;
    if (!ok)
      return problems.push({
        path: `${at}.value`,
        message: `must be a ${type === 'json' ? 'JSON object' : String(type)}`,
      });
    out.push({
      key,
      value: value as IdentityProperty['value'],
      type: type as IdentityProperty['type'],
    });
  });
  return problems.length > before ? null : out;
}

/**
 * Letta's IdentityUpdate on properties: the given ones replace those of the same key (in place), the
 * others are appended; the rest stay.
 */
export function mergeProperties(
  current: IdentityProperty[],
  given: IdentityProperty[],
): IdentityProperty[] {
  const byKey = new Map(current.map((p) => [p.key, p]));
  for (const p of given) byKey.set(p.key, p);
  return [...byKey.values()];
}
