import { WriteCountedCache } from '../../../src/database/write-counted-cache';

describe('WriteCountedCache', () => {
  it('serves a read until the next write', async () => {
    const c = new WriteCountedCache<number[]>(true);
    let loads = 0;
    const load = () => Promise.resolve([++loads]);
    expect(await c.read('k', load)).toEqual([1]);
    expect(await c.read('k', load)).toEqual([1]);
    await c.write(() => Promise.resolve());
    expect(await c.read('k', load)).toEqual([2]);
  });

  it('never serves a read that overlapped a write, nor one begun before a write ended', async () => {
    const c = new WriteCountedCache<string[]>(true);
    let release!: () => void;
    const writing = c.write(() => new Promise<void>((r) => (release = r)));
    expect(await c.read('k', () => Promise.resolve(['old']))).toEqual(['old']);
    release();
    await writing;
    expect(await c.read('k', () => Promise.resolve(['new']))).toEqual(['new']);
  });

  it('counts a write that fails, and keeps nothing when disabled', async () => {
    const c = new WriteCountedCache<string[]>(true);
    await c.read('k', () => Promise.resolve(['a']));
    await expect(c.write(() => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(await c.read('k', () => Promise.resolve(['b']))).toEqual(['b']);
    const off = new WriteCountedCache<string[]>(false);
    await off.read('k', () => Promise.resolve(['a']));
    expect(await off.read('k', () => Promise.resolve(['b']))).toEqual(['b']);
  });
});
