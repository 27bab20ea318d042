import type { ValidationProblem } from '../rules/validate-tool-rules';

/**
 * Paths of strings (values or keys) holding a NUL character. PostgreSQL text cannot store one, so
 * such input is refused up front as a 400 rather than failing in the database.
 */
export function nulBytePaths(value: unknown, basePath = '', max = 10): ValidationProblem[] {
  const out: ValidationProblem[] = [];
  const stack: [unknown, string][] = [[value, basePath]];
  while (stack.length && out.length < max) {
    const [v, p] = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000'))
        out.push({ path: p || '(body)', message: 'must not contain NUL characters' });
    } else if (Array.isArray(v)) {
      v.forEach((x, i) => stack.push([x, `${p}[${i}]`]));
    } else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        const kp = p ? `${p}.${k}` : k;
        if (k.includes('\u0000'))
          out.push({
            path: kp.split('\u0000').join('\\0'),
            message: 'key must not contain NUL characters',
          });
        else stack.push([x, kp]);
      }
    }
  }
  return out;
}
