import type { ValidationProblem } from '../rules/validate-tool-rules';

/** What every object inherits: `toString`, `valueOf`, `hasOwnProperty`, `__proto__`… */
const INHERITED = new Set(Object.getOwnPropertyNames(Object.prototype));

/**
 * Paths of keys the store would not keep as sent. An entity's save copies its JSON fields key by key
 * (TypeORM's mergeDeep): it leaves `__proto__` out, so as not to set a prototype, and a key named as an
 * inherited member holding an object or array is merged into that member and lost, so
 * `{"__proto__": {...}}` was stored as `{}`. Refused up front, as NUL characters are (nulBytePaths).
 */
export function unstorableKeyPaths(value: unknown, basePath = '', max = 10): ValidationProblem[] {
  const out: ValidationProblem[] = [];
  const stack: [unknown, string][] = [[value, basePath]];
  while (stack.length && out.length < max) {
    const [v, p] = stack.pop()!;
    if (Array.isArray(v)) v.forEach((x, i) => stack.push([x, `${p}[${i}]`]));
    else if (v && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) {
        const kp = p ? `${p}.${k}` : k;
        if (k === '__proto__' || (INHERITED.has(k) && x !== null && typeof x === 'object'))
          out.push({
            path: kp,
            message: `is a key every JavaScript object has, which is not stored as sent: use another name`,
          });
        else stack.push([x, kp]);
      }
  }
  return out;
}
