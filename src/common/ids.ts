import { randomFillSync, randomInt } from 'node:crypto';
import type { IdGenerator } from '../core/ports';
import { notFound } from './domain-error';

/**
 * Snowflake ids as decimal strings: 41+ bits of milliseconds, a 10-bit machine id, a 12-bit sequence
 * (the layout of the `snowflake-id` package this replaces, whose decimal conversion in JavaScript digit
 * arrays cost ~25 µs an id). Within one machine they only grow: past 4,096 in one millisecond, or when
 * the clock steps back, they go on from the last millisecond used.
 */
export class SnowflakeIds {
  private last = -1;
  private seq = 0;

  constructor(private readonly machine: number) {}

  next(ms: number): string {
    if (ms <= this.last) {
      ms = this.last;
      if (++this.seq > 0xfff) {
        ms++;
        this.seq = 0;
      }
    } else {
      this.seq = 0;
    }
    this.last = ms;
    return ((BigInt(ms) << 22n) | BigInt(this.machine * 0x1000 + this.seq)).toString();
  }
}

// a machine id per process, so that instances sharing a database do not make the same batch ids
const snowflake = new SnowflakeIds(randomInt(1024));

/** Letta-style prefixed ids (`agent-<uuid>`) and snowflake batch ids (decimal strings). */
export class DefaultIdGenerator implements IdGenerator {
  prefixed(prefix: string): string {
    return `${prefix}-${uuidV7(Date.now())}`;
  }
  snowflake(): string {
    return snowflake.next(Date.now());
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
  if (poolAt === POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const b = pool;
  const o = poolAt;
  poolAt += 10;
  // 48 bits of time, then version 7 and 12 random bits, then variant 10 and 62 random bits
  const hi = Math.floor(ms / 0x10000);
  return (
    hex8(hi) +
    '-' +
    HEX[(ms >>> 8) & 0xff] +
    HEX[ms & 0xff] +
    '-7' +
    HEX[b[o] & 0x0f][1] +
    HEX[b[o + 1]] +
    '-' +
    HEX[0x80 | (b[o + 2] & 0x3f)] +
    HEX[b[o + 3]] +
    '-' +
    HEX[b[o + 4]] +
    HEX[b[o + 5]] +
    HEX[b[o + 6]] +
    HEX[b[o + 7]] +
    HEX[b[o + 8]] +
    HEX[b[o + 9]]
  );
}

// Random bytes are drawn in blocks, as crypto.randomUUID does: one `randomBytes` call per id was a
// synchronous trip to the OS's generator, ~4 % of a step's CPU (docs/performance.md).
const POOL_BYTES = 10 * 512;
const pool = Buffer.alloc(POOL_BYTES);
let poolAt = POOL_BYTES;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const hex8 = (n: number) => n.toString(16).padStart(8, '0');

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
