import { fillPage, fitPage, pageOfList, takenBack } from '../../../src/common/list-page';

/** An item of `bytes` bytes as approxBytes weighs it (a string: its characters and a 16-byte header). */
const item = (bytes: number) => 'x'.repeat(bytes - 16);

describe('a page within its bytes (limits.max_page_bytes)', () => {
  const items = [item(100), item(100), item(100), item(100)];

  it.each([
    ['all fit: the page whole', 400, false, 4],
    ['past the budget: cut before the item that passes it', 250, false, 2],
    ['exactly the budget: kept', 300, false, 3],
    ['one larger than the budget: it alone (a client always gets somewhere)', 10, false, 1],
    ['taken back from a before cursor: cut at the start, the end kept', 250, true, 2],
  ])('%s', (_name, maxBytes, fromEnd, kept) => {
    const page = fitPage(items, maxBytes, fromEnd);
    expect(page).toHaveLength(kept);
    expect(page).toEqual(fromEnd ? items.slice(items.length - kept) : items.slice(0, kept));
  });

  it('a large item after small ones ends the page before it', () => {
    expect(fitPage([item(50), item(50), item(1000), item(50)], 500)).toHaveLength(2);
  });

  it('loading one at a time stops at the budget: nothing past it is loaded', async () => {
    const loaded: number[] = [];
    const load = (i: number) => {
      loaded.push(i);
      return Promise.resolve(item(100));
    };
    expect(await fillPage([0, 1, 2, 3, 4], 250, false, load)).toHaveLength(2);
    expect(loaded).toEqual([0, 1, 2]);
    loaded.length = 0;
    expect(await fillPage([0, 1, 2, 3, 4], 250, true, load)).toHaveLength(2);
    expect(loaded).toEqual([4, 3, 2]);
  });

  it.each([
    [{ before: 'b' }, true],
    [{ before: 'b', after: 'a' }, false],
    [{ after: 'a' }, false],
    [{ before: null, after: null }, false],
    [{ before: '' }, false],
  ])('a page taken back from its cursor: %j → %s', (q, back) => expect(takenBack(q)).toBe(back));

  it('a list held whole pages by bytes too, and paging on with after / before sees every item once', () => {
    const list = Array.from({ length: 7 }, (_, i) => ({ id: `i${i}`, text: item(100) }));
    const limits = { max_page_size: 1000, max_page_bytes: 400 };
    const forward: string[] = [];
    for (let q: Record<string, unknown> = {}; ;) {
      const page = pageOfList(list, q, limits, 'an item');
      if (!page.length) break;
      expect(page.length).toBeLessThan(list.length);
      forward.push(...page.map((x) => x.id));
      q = { after: page[page.length - 1].id };
    }
    expect(forward).toEqual(list.map((x) => x.id));
    const back: string[] = [];
    for (let q: Record<string, unknown> = { before: 'i6' }; ;) {
      const page = pageOfList(list, q, limits, 'an item');
      if (!page.length) break;
      back.unshift(...page.map((x) => x.id));
      q = { before: page[0].id };
    }
    expect(back).toEqual(list.slice(0, 6).map((x) => x.id));
  });
});
