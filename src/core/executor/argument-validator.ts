import Ajv, { ValidateFunction } from 'ajv';

/**
 * Validates arguments against a tool's JSON Schema. Each schema is compiled once: by object identity
 * (the same ToolDefinition across calls) and, for schemas rebuilt from storage, by their JSON text.
 */
export class ArgumentValidator {
  private readonly ajv = new Ajv({ strict: false, allErrors: true });
  private readonly byObject = new WeakMap<object, ValidateFunction | Error>();
  private readonly byText = new Map<string, { fn: ValidateFunction | Error; schema: object }>();

  constructor(private readonly maxSchemas = 1000) {}

  /** `null` when valid, else one line naming what is wrong. */
  validate(schema: Record<string, unknown>, args: Record<string, unknown>): string | null {
    const fn = this.compiled(schema);
    if (fn instanceof Error) return `the tool's parameter schema is invalid (${fn.message})`;
    if (fn(args)) return null;
    return (fn.errors ?? [])
      .map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`)
      .join('; ');
  }

  private compiled(schema: Record<string, unknown>): ValidateFunction | Error {
    let fn = this.byObject.get(schema);
    if (fn) return fn;
    const text = JSON.stringify(schema);
    fn = this.byText.get(text)?.fn;
    if (!fn) {
      try {
        fn = this.ajv.compile(schema);
      } catch (e) {
        fn = e instanceof Error ? e : new Error(String(e));
      }
      // Bounded: drop the oldest schema when full (Map keeps insertion order).
      if (this.byText.size >= this.maxSchemas) {
        const [oldest, entry] = this.byText.entries().next().value!;
        this.byText.delete(oldest);
        this.ajv.removeSchema(entry.schema); // ajv keeps its own cache by schema object
      }
      this.byText.set(text, { fn, schema });
    }
    this.byObject.set(schema, fn);
    return fn;
  }
}
