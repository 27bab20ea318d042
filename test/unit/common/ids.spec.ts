import { DefaultIdGenerator, isPrefixedId, uuidV7 } from '../../../src/common/ids';

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
