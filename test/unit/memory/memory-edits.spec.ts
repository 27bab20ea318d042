import {
  expandTabs,
  LINE_NUMBER_WARNING,
  memoryInsert,
  memoryReplace,
} from '../../../src/core/memory/memory-edits';

describe('memoryReplace (Letta memory_replace)', () => {
  const ok: [string, string, string, string, string][] = [
    [
      'replaces the one occurrence',
      'Name: Alice\nLikes tea',
      'Alice',
      'Bob',
      'Name: Bob\nLikes tea',
    ],
    ['an empty new_string deletes', 'a b c', ' b', '', 'a c'],
    ['$ patterns in new_string are literal', 'x', 'x', '$&$1', '$&$1'],
    ['tabs are expanded as Python does', 'a\tb', 'a       b', 'c', 'c'],
  ];
  it.each(ok)('%s', (_n, current, oldS, newS, expected) => {
    expect(memoryReplace(current, 'human', oldS, newS)).toBe(expected);
  });

  const refused: [string, string, string, string, string][] = [
    [
      'old_string missing',
      'Name: Alice',
      'Carol',
      'Bob',
      'No replacement was performed, old_string `Carol` did not appear verbatim in memory block with label `human`.',
    ],
    [
      'old_string not unique names its lines',
      'tea\ncoffee\ntea',
      'tea',
      'x',
      'No replacement was performed. Multiple occurrences of old_string `tea` in lines [1, 3]. Please ensure it is unique.',
    ],
    [
      'a line number prefix in old_string',
      'Name: Alice',
      '1→ Name: Alice',
      'x',
      'old_string contains a line number prefix, which is not allowed. Do not include line numbers when calling memory tools (line numbers are for display purposes only).',
    ],
    [
      'the line number warning in old_string',
      'Name: Alice',
      `${LINE_NUMBER_WARNING}\nName`,
      'x',
      'old_string contains a line number warning, which is not allowed. Do not include line number information when calling memory tools (line numbers are for display purposes only).',
    ],
    [
      'a line number prefix in new_string',
      'Name: Alice',
      'Alice',
      '2→ Bob',
      'new_string contains a line number prefix, which is not allowed. Do not include line numbers when calling memory tools (line numbers are for display purposes only).',
    ],
  ];
  it.each(refused)('%s', (_n, current, oldS, newS, error) => {
    expect(() => memoryReplace(current, 'human', oldS, newS)).toThrow(error);
  });
});

describe('memoryInsert (Letta memory_insert)', () => {
  const ok: [string, string, string, number, string][] = [
    ['-1 appends a line', 'a\nb', 'c', -1, 'a\nb\nc'],
    ['0 inserts before the first line', 'a\nb', 'c', 0, 'c\na\nb'],
    ['n inserts after line n', 'a\nb', 'c', 1, 'a\nc\nb'],
    ['several lines at once', 'a', 'b\nc', -1, 'a\nb\nc'],
    ['an empty block is one empty line (as Letta)', '', 'x', -1, '\nx'],
  ];
  it.each(ok)('%s', (_n, current, text, line, expected) => {
    expect(memoryInsert(current, text, line)).toBe(expected);
  });

  it('an insert_line past the block is refused with the valid range', () => {
    expect(() => memoryInsert('a\nb', 'c', 3)).toThrow(
      'Invalid `insert_line` parameter: 3. It should be within the range of lines of the memory block: [0, 2], or -1 to append to the end of the memory block.',
    );
    expect(() => memoryInsert('a', 'c', -2)).toThrow('Invalid `insert_line` parameter: -2.');
  });

  it('line number prefixes and the warning are refused', () => {
    expect(() => memoryInsert('a', '3→ c', -1)).toThrow('new_string contains a line number prefix');
    expect(() => memoryInsert('a', LINE_NUMBER_WARNING, -1)).toThrow(
      'new_string contains a line number warning',
    );
  });
});

describe('expandTabs', () => {
  it.each([
    ['a\tb', 'a       b'],
    ['abcdefgh\tx', 'abcdefgh        x'],
    ['x\n\ty', 'x\n        y'],
  ])('%j', (input, out) => expect(expandTabs(input)).toBe(out));
});
