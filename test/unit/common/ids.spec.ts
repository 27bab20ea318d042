import { DefaultIdGenerator, isPrefixedId, SnowflakeIds, uuidV7 } from '../../../src/common/ids';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('uuidV7', () => {
  it('is an RFC 9562 version 7 UUID carrying the time in milliseconds', () => {
    for (const ms of [0, 1, 0xffff, 0x1_0000, 2 ** 32 - 1, 2 ** 32, Date.now(), 2 ** 48 - 1]) {
      const id = uuidV7(ms);
      expect(id).toMatch(V7);
      expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(ms);
    }
  });

  it('sorts by time, and never repeats across many blocks of random bytes', () => {
    const seen = new Set<string>();
    let last = '';
    for (let i = 0; i < 20_000; i++) {
      const id = uuidV7(1_700_000_000_000 + Math.floor(i / 100));
      expect(seen.has(id)).toBe(false);
      seen.add(id);
      if (i % 100 === 0) {
        expect(id > last).toBe(true);
        last = id.slice(0, 13) + 'z';
      }
    }
  });

  it('is what prefixed ids are made of', () => {
    const id = new DefaultIdGenerator().prefixed('message');
    expect(isPrefixedId('message', id)).toBe(true);
    expect(id.slice('message-'.length)).toMatch(V7);
  });
});

describe('SnowflakeIds', () => {
  const parts = (id: string) => {
    const n = BigInt(id);
    return { ms: Number(n >> 22n), machine: Number((n >> 12n) & 0x3ffn), seq: Number(n & 0xfffn) };
  };

  it('lays out milliseconds, machine and sequence as a decimal string', () => {
    const ids = new SnowflakeIds(777);
    expect(parts(ids.next(1_700_000_000_000))).toEqual({
      ms: 1_700_000_000_000,
      machine: 777,
      seq: 0,
    });
    expect(parts(ids.next(1_700_000_000_000))).toEqual({
      ms: 1_700_000_000_000,
      machine: 777,
      seq: 1,
    });
    expect(parts(ids.next(1_700_000_000_005))).toEqual({
      ms: 1_700_000_000_005,
      machine: 777,
      seq: 0,
    });
    expect(new DefaultIdGenerator().snowflake()).toMatch(/^[0-9]{19}$/);
  });

  it('only grows, past 4,096 ids in one millisecond and when the clock steps back', () => {
    const ids = new SnowflakeIds(1023);
    let last = 0n;
    const clock = [
      ...Array<number>(5000).fill(1_700_000_000_000),
      1_699_999_999_000,
      1_700_000_000_002,
    ];
    for (const ms of clock) {
      const id = BigInt(ids.next(ms));
      expect(id > last).toBe(true);
      last = id;
    }
    expect(parts(last.toString()).ms).toBe(1_700_000_000_002);
  });
});
