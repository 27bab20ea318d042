/**
 * Letta's memory_replace / memory_insert edits of a block's value (letta/services/tool_executor/
 * core_tool_executor.py): pure functions of the current value; a refusal throws Letta's error text,
 * which the model sees as the tool's error return.
 */

/** Letta's CORE_MEMORY_LINE_NUMBER_WARNING: shown above numbered blocks, never part of an edit. */
export const LINE_NUMBER_WARNING =
  "# NOTE: Line numbers shown below (with arrows like '1→') are to help during editing. Do NOT include line number prefixes in your memory edit tool calls.";
/** Letta's MEMORY_TOOLS_LINE_NUMBER_PREFIX_REGEX: a `12→` view prefix copied into an edit. */
const LINE_NUMBER_PREFIX = /^[ \t]*\d+→[ \t]*/m;

const prefixError = (arg: string) =>
  `${arg} contains a line number prefix, which is not allowed. Do not include line numbers when calling memory tools (line numbers are for display purposes only).`;
const warningError = (arg: string) =>
  `${arg} contains a line number warning, which is not allowed. Do not include line number information when calling memory tools (line numbers are for display purposes only).`;

/** Python's str.expandtabs(): a tab moves to the next multiple of 8 columns of its line. */
export function expandTabs(s: string, size = 8): string {
  if (!s.includes('\t')) return s;
  let out = '';
  let col = 0;
  for (const ch of s) {
    if (ch === '\t') {
      const pad = size - (col % size);
      out += ' '.repeat(pad);
      col += pad;
    } else {
      out += ch;
      col = ch === '\n' || ch === '\r' ? 0 : col + 1;
    }
  }
  return out;
}

/** Non-overlapping occurrences, as Python's str.count counts them (the empty string: length + 1). */
function occurrences(value: string, part: string): number {
  if (part === '') return value.length + 1;
  return value.split(part).length - 1;
}

export function memoryReplace(
  current: string,
  label: string,
  oldString: string,
  newString: string,
): string {
  if (LINE_NUMBER_PREFIX.test(oldString)) throw new Error(prefixError('old_string'));
  if (oldString.includes(LINE_NUMBER_WARNING)) throw new Error(warningError('old_string'));
  if (LINE_NUMBER_PREFIX.test(newString)) throw new Error(prefixError('new_string'));
  const oldS = expandTabs(oldString);
  const newS = expandTabs(newString);
  const value = expandTabs(current);
  const count = occurrences(value, oldS);
  if (count === 0)
    throw new Error(
      `No replacement was performed, old_string \`${oldS}\` did not appear verbatim in memory block with label \`${label}\`.`,
    );
  if (count > 1) {
    const lines = value.split('\n').flatMap((line, i) => (line.includes(oldS) ? [i + 1] : []));
    throw new Error(
      `No replacement was performed. Multiple occurrences of old_string \`${oldS}\` in lines [${lines.join(', ')}]. Please ensure it is unique.`,
    );
  }
  return oldS === '' ? newS + value : value.replace(oldS, () => newS);
}

export function memoryInsert(current: string, newString: string, insertLine: number): string {
  if (LINE_NUMBER_PREFIX.test(newString)) throw new Error(prefixError('new_string'));
  if (newString.includes(LINE_NUMBER_WARNING)) throw new Error(warningError('new_string'));
  const lines = expandTabs(current).split('\n');
  const n = lines.length;
  let at = insertLine;
  if (at === -1) at = n;
  else if (at < 0 || at > n)
    throw new Error(
      `Invalid \`insert_line\` parameter: ${insertLine}. It should be within the range of lines of the memory block: [0, ${n}], or -1 to append to the end of the memory block.`,
    );
  return [...lines.slice(0, at), ...expandTabs(newString).split('\n'), ...lines.slice(at)].join(
    '\n',
  );
}
