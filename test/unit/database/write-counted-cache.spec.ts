import { WriteCountedCache } from '../../../src/database/write-counted-cache';

describe('WriteCountedCache', () => {
  it('serves a read until the next write', async () => {
    const c = new WriteCountedCache<number[]>(true, 1_000_000);
    let loads = 0;
    const load = () => Promise.resolve([++loads]);
    expect(await c.read('k', load)).toEqual([1]);
    expect(await c.read('k', load)).toEqual([1]);
    await c.write(() => Promise.resolve());
    expect(await c.read('k', load)).toEqual([2]);
  });

  it('never serves a read that overlapped a write, nor one begun before a write ended', async () => {
    const c = new WriteCountedCache<string[]>(true, 1_000_000);
    let release!: () => void;
    const writing = c.write(() => new Promise<void>((r) => (release = r)));
    expect(await c.read('k', () => Promise.resolve(['old']))).toEqual(['old']);
    release();
    await writing;
    expect(await c.read('k', () => Promise.resolve(['new']))).toEqual(['new']);
  });

  it('counts a write that fails, and keeps nothing when disabled', async () => {
    const c = new WriteCountedCache<string[]>(true, 1_000_000);
    await c.read('k', () => Promise.resolve(['a']));
    await expect(c.write(() => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(await c.read('k', () => Promise.resolve(['b']))).toEqual(['b']);
    const off = new WriteCountedCache<string[]>(false, 1_000_000);
    await off.read('k', () => Promise.resolve(['a']));
    expect(await off.read('k', () => Promise.resolve(['b']))).toEqual(['b']);
  });

  it('holds entries up to its byte bound: a larger one is not kept, and new ones push the oldest out', async () => {
    const c = new WriteCountedCache<string[]>(true, 10_000);
    let loads = 0;
    const big = () => Promise.resolve([String(++loads).padEnd(20_000, 'x')]);
    await c.read('big', big);
    await c.read('big', big);
    expect(loads).toBe(2);
    const small = (k: string) => () => Promise.resolve([k.padEnd(4_000, 'y'), String(++loads)]);
    const first = await c.read('a', small('a'));
    expect(await c.read('a', small('a'))).toBe(first);
    await c.read('b', small('b'));
    await c.read('c', small('c')); // a, b and c do not fit together: a, the least recently used, goes
    expect(await c.read('a', small('a'))).not.toBe(first);
  });
});
