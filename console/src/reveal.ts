/**
 * Text a person must read as it is: every character that renders as nothing, moves other text or looks
 * like an ordinary space is shown as its escape (`\u202E`), so a right-to-left override cannot reorder
 * what follows it, a zero-width space cannot make two keys look alike, and a run of ideographic or
 * no-break spaces cannot push the real value out of view. The console shows every text a tenant, a model
 * or a tool wrote through it (revealed.tsx). Plain text only: the pieces are rendered as text nodes.
 */

/**
 * Invisible, direction-control, unusual-space and non-character code points: every control, format,
 * surrogate, private-use and unassigned one (\p{C}, which holds U+200B-U+200F, U+202A-U+202E,
 * U+2066-U+2069, U+FEFF, the tag characters), every separator but the ordinary space (\p{Z}: U+00A0,
 * U+2000-U+200A, U+3000, U+2028, …), and the blank-looking letters and marks (variation selectors,
 * the combining grapheme joiner, Hangul fillers, the Braille blank, Khmer and Mongolian invisibles).
 */
const HIDDEN_CLASSES = /[\p{C}\p{Z}]/u;
/** [first, last] code points that render blank though they are letters or marks. */
const BLANK_LOOKING: [number, number][] = [
  [0x034f, 0x034f], // combining grapheme joiner
  [0x115f, 0x1160], // Hangul fillers
  [0x17b4, 0x17b5], // Khmer inherent vowels
  [0x180b, 0x180f], // Mongolian variation selectors
  [0x2800, 0x2800], // Braille blank
  [0x3164, 0x3164], // Hangul filler
  [0xfe00, 0xfe0f], // variation selectors
  [0xffa0, 0xffa0], // halfwidth Hangul filler
  [0xe0100, 0xe01ef], // variation selectors supplement
];

/**
 * The blanks shown as themselves, each up to a run this long (a longer run is one escape with its count,
 * so padding cannot push what follows out of view). A line (a name, a key, a title) keeps only the
 * ordinary space: a line break there could make a title read as two. Lines of text (a message, a
 * prompt, pretty-printed JSON) keep line breaks, tabs and indentation too.
 */
const LINE_BLANKS = new Map([[' ', 8]]);
const LINES_BLANKS = new Map([
  [' ', 32],
  ['\t', 8],
  ['\n', 3],
]);

export type Piece = { text: string } | { escape: string; count: number };

const hidden = (ch: string): boolean => {
  if (ch === ' ') return false;
  if (HIDDEN_CLASSES.test(ch)) return true;
  const cp = ch.codePointAt(0)!;
  return BLANK_LOOKING.some(([a, b]) => cp >= a && cp <= b);
};

const escapeOf = (ch: string): string => {
  const cp = ch.codePointAt(0)!;
  return cp <= 0xffff
    ? `\\u${cp.toString(16).toUpperCase().padStart(4, '0')}`
    : `\\u{${cp.toString(16).toUpperCase()}}`;
};

/** Whether the text holds a character `reveal` escapes (long runs of ordinary spaces aside). */
export const hasHidden = (text: string): boolean => [...text].some(hidden);

/**
 * The text as pieces: plain runs, and escapes (a run of one hidden character, or a long run of a blank, is
 * one). `lines`: the text is lines (a message, JSON), its line breaks and indentation are kept.
 */
export function reveal(text: string, lines = false): Piece[] {
  const blanks = lines ? LINES_BLANKS : LINE_BLANKS;
  const out: Piece[] = [];
  const chars = [...text];
  let plain = '';
  for (let i = 0; i < chars.length;) {
    const ch = chars[i];
    let j = i + 1;
    while (j < chars.length && chars[j] === ch) j++;
    const run = j - i;
    const limit = blanks.get(ch);
    if (limit !== undefined ? run >= limit : hidden(ch)) {
      if (plain) out.push({ text: plain });
      plain = '';
      out.push({ escape: escapeOf(ch), count: run });
    } else plain += ch.repeat(run);
    i = j;
  }
  if (plain) out.push({ text: plain });
  return out;
}

const shown = (p: Piece): string =>
  'text' in p ? p.text : p.escape + (p.count > 1 ? `×${p.count}` : '');

/** The text with its hidden characters as escapes, as one string. */
export const revealedText = (text: string, lines = false): string =>
  reveal(text, lines).map(shown).join('');

/**
 * The start of the text as revealed, about `max` characters as shown (a run of hidden characters is
 * its one escape, so a padding of 5,000 ideographic spaces cannot push the rest out of the preview),
 * and how many characters of the text it leaves out.
 */
export function preview(
  text: string,
  max: number,
  lines = false,
): { pieces: Piece[]; more: number } {
  const pieces: Piece[] = [];
  let room = max;
  let taken = 0;
  for (const p of reveal(text, lines)) {
    if (room <= 0) break;
    if ('text' in p) {
      const chars = [...p.text];
      const part = chars.slice(0, room);
      pieces.push({ text: part.join('') });
      room -= part.length;
      taken += part.length;
    } else {
      pieces.push(p);
      room -= shown(p).length;
      taken += p.count;
    }
  }
  return { pieces, more: [...text].length - taken };
}

/** How much of a name (agent, tool, scope) a title, a card or a cell shows. */
export const NAME_MAX = 64;

/**
 * A line as one short string for where only text goes (an option, an accessible name, a tooltip, a
 * browser notification): revealed, about `max` characters as shown, "…" when cut.
 */
export function clippedText(text: string, max = NAME_MAX): string {
  const { pieces, more } = preview(text, max);
  return pieces.map(shown).join('') + (more > 0 ? '…' : '');
}

/** An argument's value as one line of text: JSON (strings quoted, so 50 and "50" differ). */
export const valueText = (v: unknown): string => JSON.stringify(v) ?? String(v);
