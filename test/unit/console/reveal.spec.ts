import {
  clippedText,
  hasHidden,
  preview,
  reveal,
  revealedText,
  valueText,
} from '../../../console/src/reveal';

/** What the consent dialog shows of an argument: every hidden character as its escape (console/src/reveal.ts). */
describe('console: arguments are shown as they are', () => {
  it.each([
    ['a right-to-left override', 'pay \u202Emoc.elpmaxe@lorac', 'pay \\u202Emoc.elpmaxe@lorac'],
    ['an isolate', 'a\u2066b\u2069', 'a\\u2066b\\u2069'],
    ['a zero-width space in a key', 'amo\u200Bunt', 'amo\\u200Bunt'],
    ['a zero-width joiner and a BOM', 'x\u200D\uFEFFy', 'x\\u200D\\uFEFFy'],
    ['a run of ideographic spaces', `50${'\u3000'.repeat(5000)}k`, '50\\u3000×5000k'],
    ['no-break spaces', `a${'\u00A0'.repeat(3)}b`, 'a\\u00A0×3b'],
    ['a line separator', 'a\u2028b', 'a\\u2028b'],
    ['a C1 control', 'a\u0085b', 'a\\u0085b'],
    ['a soft hyphen', 'pay\u00ADpal', 'pay\\u00ADpal'],
    ['a Hangul filler', 'a\u3164b', 'a\\u3164b'],
    ['a variation selector', 'a\uFE0Fb', 'a\\uFE0Fb'],
    ['a tag character', 'a\u{E0041}b', 'a\\u{E0041}b'],
    ['a long run of ordinary spaces', `a${' '.repeat(40)}b`, 'a\\u0020×40b'],
  ])('%s is escaped', (_what, text, shown) => {
    expect(revealedText(text)).toBe(shown);
  });

  it('ordinary text, short runs of spaces and letters of any script stay as they are', () => {
    for (const text of ['carol@example.com', 'a   b', 'שלום', 'عربي', '日本語', 'café', '👍🏽'])
      expect(reveal(text)).toEqual([{ text }]);
    expect(hasHidden('a   b')).toBe(false);
    expect(hasHidden(`a${' '.repeat(40)}b`)).toBe(false); // shown with a count, but not a warning
    expect(hasHidden('amo\u200Bunt')).toBe(true);
  });

  it('a run of one hidden character is one escape with its count', () => {
    expect(reveal(`x${'\u3000'.repeat(3)}y`)).toEqual([
      { text: 'x' },
      { escape: '\\u3000', count: 3 },
      { text: 'y' },
    ]);
  });

  it('values are JSON (50 and "50" differ)', () => {
    expect(valueText(50)).toBe('50');
    expect(valueText('50')).toBe('"50"');
    expect(valueText({ a: [1] })).toBe('{"a":[1]}');
  });

  it('a preview counts characters as shown: a padding run is one escape, so what follows it is in view', () => {
    const padded = `"${'\u3000'.repeat(5000)}and 1 more"`;
    expect(preview(padded, 40)).toEqual({
      pieces: [{ text: '"' }, { escape: '\\u3000', count: 5000 }, { text: 'and 1 more"' }],
      more: 0,
    });
    expect(preview('a'.repeat(10), 4)).toEqual({ pieces: [{ text: 'aaaa' }], more: 6 });
    expect(preview('😀😀😀', 2)).toEqual({ pieces: [{ text: '😀😀' }], more: 1 });
    expect(preview('abc', 5)).toEqual({ pieces: [{ text: 'abc' }], more: 0 });
  });

  it('a line (a name, a title) shows a line break as its escape: a name cannot make a title read as two lines', () => {
    expect(revealedText('ops\napprove read_file')).toBe('ops\\u000Aapprove read_file');
    expect(revealedText('a\tb')).toBe('a\\u0009b');
  });

  it('lines of text (a message, pretty JSON) keep their line breaks, tabs and indentation; long runs of them are one escape', () => {
    const json = JSON.stringify({ a: { b: { c: { d: { e: 1 } } } } }, null, 2);
    expect(reveal(json, true)).toEqual([{ text: json }]);
    expect(revealedText('one\n\ntwo\tthree', true)).toBe('one\n\ntwo\tthree');
    expect(revealedText(`hi${'\n'.repeat(500)}approve`, true)).toBe('hi\\u000A×500approve');
    expect(revealedText(`a${' '.repeat(40)}b`, true)).toBe('a\\u0020×40b');
    // everything else is escaped as in a line
    expect(revealedText('x\r\n\u202Ey', true)).toBe('x\\u000D\n\\u202Ey');
  });

  it('a clipped name is revealed, about max characters as shown, with "…" when cut', () => {
    expect(clippedText('pay')).toBe('pay');
    expect(clippedText('a'.repeat(100), 10)).toBe(`${'a'.repeat(10)}…`);
    expect(clippedText(`ops\u202E${'\u3000'.repeat(5000)}x`, 21)).toBe('ops\\u202E\\u3000×5000x');
    expect(clippedText('d'.repeat(64))).toBe('d'.repeat(64));
    expect(clippedText('d'.repeat(65))).toBe(`${'d'.repeat(64)}…`);
  });
});
