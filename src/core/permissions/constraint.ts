import { SchemaCompiler } from '../schemas/schema-compiler';

/**
 * Compiles grant argument constraints (JSON Schema) once and caches them (bounded): a grant is checked
 * on every covered call, and compiling is the expensive part.
 */
export class ConstraintCompiler extends SchemaCompiler {
  constructor(maxEntries = 1000) {
    super(
      {
        allErrors: false,
        strict: true, // an unknown keyword (a typo like "maximun") must fail, not silently allow everything
        strictTypes: false,
        strictTuples: false,
      },
      maxEntries,
    );
  }

  /** True when the arguments satisfy the constraint; a constraint that does not compile covers nothing. */
  satisfies(schema: Record<string, unknown>, args: Record<string, unknown>): boolean {
    const compiled = this.compile(schema);
    if (!compiled.ok) return false;
    const ok = compiled.validate(args) === true;
    compiled.validate.errors = null; // a cached validator must not keep the last call's errors alive
    return ok;
  }
}
