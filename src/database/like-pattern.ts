/** A LIKE pattern matching texts that contain `text` (lower-cased; use with `ESCAPE '\'` on a LOWER() column). */
export function containsPattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => '\\' + c)}%`;
}
