import type { ValidateFunction } from 'ajv';
import { describeProblems, SchemaCompiler } from '../schemas/schema-compiler';

/** Errors named in one answer (failed anyOf branches each add one). */
const MAX_REPORTED_ERRORS = 5;

/**
 * Validates arguments against a tool's JSON Schema. Each schema is compiled once: by object identity
 * (the same ToolDefinition across calls) and, for schemas rebuilt from storage, by their JSON text
 * (the compiler's bounded cache).
 */
export class ArgumentValidator {
  private readonly compiler: SchemaCompiler;
  private readonly byObject = new WeakMap<object, ValidateFunction | string>();

  constructor(maxSchemas = 1000) {
    // the first error only: with allErrors every failed branch of every anyOf would be kept and joined
    this.compiler = new SchemaCompiler({ strict: false, allErrors: false }, maxSchemas);
  }

  /** `null` when valid, else one line naming what is wrong. */
  validate(schema: Record<string, unknown>, args: Record<string, unknown>): string | null {
    const fn = this.compiled(schema);
    if (typeof fn === 'string') return `the tool's parameter schema is invalid (${fn})`;
    if (fn(args)) return null;
    const errors = fn.errors ?? [];
    fn.errors = null; // the cached validator must not keep the last call's errors alive
    return errors
      .slice(0, MAX_REPORTED_ERRORS)
      .map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`)
      .join('; ');
  }

  private compiled(schema: Record<string, unknown>): ValidateFunction | string {
    let fn = this.byObject.get(schema);
    if (fn) return fn;
    const c = this.compiler.compile(schema);
    fn = c.ok ? c.validate : describeProblems(c.problems);
    this.byObject.set(schema, fn);
    return fn;
  }
}
