import { forkRanges, inWindow, type SharedRange } from '../../../../src/core/loop/fork-ranges';

const r = (conversation_id: string | null, from_seq: number, to_seq: number): SharedRange => ({
  conversation_id,
  from_seq,
  to_seq,
});

describe('forkRanges: what a fork shares', () => {
  it.each<[string, string | null, SharedRange[] | null, number, number, SharedRange[]]>([
    ['a plain source: its window up to the cut', 'c1', null, 0, 9, [r('c1', 0, 9)]],
    ['the default conversation', null, null, 4, 9, [r(null, 4, 9)]],
    [
      "a fork's source: what it shares, clipped to its window and the cut",
      'c2',
      [r(null, 0, 5), r('c1', 2, 8)],
      3,
      6,
      [r(null, 3, 5), r('c1', 3, 6), r('c2', 3, 6)],
    ],
    ['ranges wholly before the window are dropped', 'c2', [r(null, 0, 5)], 7, 9, [r('c2', 7, 9)]],
  ])('%s', (_, source, inherited, start, cut, expected) => {
    expect(forkRanges(source, inherited, start, cut)).toEqual(expected);
  });
});

describe('inWindow', () => {
  const inherited = [r(null, 2, 5)];
  it.each<[string, string | null, number, boolean]>([
    ['its own message', 'c1', 9, true],
    ['its own message before the window', 'c1', 2, false],
    ['a shared message', null, 4, true],
    ['a message of the source after the cut', null, 6, false],
    ["another conversation's message", 'c9', 4, false],
  ])('%s', (_, conversation_id, seq_id, expected) => {
    expect(inWindow({ conversation_id, seq_id }, 'c1', inherited, 3)).toBe(expected);
  });
});
