/**
 * A rough size in memory of a record as read from the database (objects, arrays, strings, numbers):
 * what the record caches are bounded by. Strings count their characters plus a header; other leaves 8
 * bytes; objects and arrays a header and 8 bytes an entry (plus the key for objects). Not exact (V8's
 * layouts vary), but proportional to what a record holds, which is what a bound against large records needs.
 */
export function approxBytes(value: unknown, depth = 0): number {
  if (typeof value === 'string') return 16 + value.length;
  if (value === null || typeof value !== 'object') return 8;
  // records are trees; the cap only stops a cycle from recursing forever
  if (depth > 64) return 0;
  if (ArrayBuffer.isView(value)) return 64 + value.byteLength;
  let n = 32;
  if (Array.isArray(value)) {
    for (const v of value) n += 8 + approxBytes(v, depth + 1);
    return n;
  }
  for (const k in value)
    n += 8 + 16 + k.length + approxBytes((value as Record<string, unknown>)[k], depth + 1);
  return n;
}
