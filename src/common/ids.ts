import { randomBytes, randomInt } from 'node:crypto';
import type { IdGenerator } from '../core/ports';
import { notFound } from './domain-error';

// snowflake-id ships CommonJS without types; `require` hands back {default}.
const SnowflakeCtor = // eslint-disable-next-line @typescript-eslint/no-require-imports
  (require('snowflake-id') as { default: new (opts?: object) => { generate(): string } }).default;

// a machine id per process, so that instances sharing a database do not make the same batch ids
const snowflake = new SnowflakeCtor({ mid: randomInt(1024), offset: 0 });

/** Letta-style prefixed ids (`agent-<uuid>`) and snowflake batch ids (decimal strings). */
export class DefaultIdGenerator implements IdGenerator {
  prefixed(prefix: string): string {
    return `${prefix}-${uuidV7(Date.now())}`;
  }
  snowflake(): string {
    return snowflake.generate();
  }
}

export const ID_GENERATOR = Symbol('ID_GENERATOR');

/**
 * A UUID version 7 (RFC 9562): the time in milliseconds, then 74 random bits. Ids made one after another
 * sort together, so a new row's primary key (and every index that starts with an id) lands at the end
 * of its B-tree instead of a random page of it: with a long history, random keys made each commit write
 * a page per row (measured in docs/performance.md).
 */
export function uuidV7(ms: number): string {
  const b = randomBytes(16);
  b.writeUIntBE(ms, 0, 6);
  b[6] = 0x70 | (b[6] & 0x0f);
  b[8] = 0x80 | (b[8] & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const idPatterns = new Map<string, RegExp>();

/** True for ids of the form `<prefix>-<uuid>`; anything else (NUL, `../`, 200+ chars) is not an id. */
export function isPrefixedId(prefix: string, id: unknown): id is string {
  if (typeof id !== 'string' || id.length > 200) return false;
  let re = idPatterns.get(prefix);
  if (!re) idPatterns.set(prefix, (re = new RegExp(`^${prefix}-${UUID}$`, 'i')));
  return re.test(id);
}

/** Throws 404 for a malformed id before any database look-up. */
export function assertPrefixedId(prefix: string, what: string, id: unknown): string {
  if (!isPrefixedId(prefix, id))
    throw notFound(what, typeof id === 'string' ? id.slice(0, 200) : String(id));
  return id;
}
