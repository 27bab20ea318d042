import Ajv, { ValidateFunction } from 'ajv';

/**
 * Compiles grant argument constraints (JSON Schema) once and caches them by their text: a grant is
 * checked on every covered call, and compiling is the expensive part.
 */
export class ConstraintCompiler {
  private readonly ajv = new Ajv({
    allErrors: false,
    strict: true, // an unknown keyword (a typo like "maximun") must fail, not silently allow everything
    strictTypes: false,
    strictTuples: false,
    allowUnionTypes: true,
  });
  private readonly cache = new Map<string, ValidateFunction>();

  constructor(private readonly maxEntries = 1000) {}

  compile(
    schema: Record<string, unknown>,
  ): { ok: true; validate: ValidateFunction } | { ok: false; error: string } {
    const key = JSON.stringify(schema);
    const hit = this.cache.get(key);
    if (hit) return { ok: true, validate: hit };
    try {
      const validate = this.ajv.compile(schema);
      if (this.cache.size >= this.maxEntries) {
        const oldest = this.cache.keys().next().value;
        if (oldest !== undefined) this.cache.delete(oldest);
      }
      this.cache.set(key, validate);
      return { ok: true, validate };
    } catch (e) {
      return { ok: false, error: (e as Error).message };
    }
  }

  /** True when the arguments satisfy the constraint; a constraint that does not compile covers nothing. */
  satisfies(schema: Record<string, unknown>, args: Record<string, unknown>): boolean {
    const compiled = this.compile(schema);
    return compiled.ok && compiled.validate(args) === true;
  }
}
