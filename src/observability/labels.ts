import type { ToolOutcomeFacts } from '../common/run-events';

/**
 * Metric labels (and span names) must stay few: every distinct value is a series kept for the life of
 * the process. A tool name the model invents, a client tool a request declares, a model name an agent
 * picks are the model's or a tenant's to choose, so they are bounded here (config `observability.labels`).
 */
export interface LabelBounds {
  /** Distinct model labels; later new ones are `<other>`. */
  max_models: number;
  /** Distinct tool labels; likewise. */
  max_tools: number;
  /** A longer label value is cut (tool names are at most 64 characters; MCP ones a little more). */
  max_chars: number;
}

/** The label of a call to a tool the agent does not have (the model invented its name). */
export const UNKNOWN_TOOL = '<unknown>';
/** The label of a value that came after a label's first `maxValues` distinct ones. */
export const OTHER_LABEL = '<other>';

export const cutLabel = (v: string, maxChars: number): string =>
  v.length > maxChars ? v.slice(0, maxChars) : v;

/** The tool a call's metrics and span are named by: the agent's tool, or `<unknown>` for a name it has not. */
export function toolLabel(
  o: Pick<ToolOutcomeFacts, 'tool' | 'error_type'>,
  maxChars: number,
): string {
  return o.error_type === 'NotFound' ? UNKNOWN_TOOL : cutLabel(o.tool, maxChars);
}

/** A label's values: the first `maxValues` distinct ones (cut to `maxChars`) as they are, later ones `<other>`. */
export class BoundedLabel {
  private readonly seen = new Set<string>();

  constructor(
    private readonly maxValues: number,
    private readonly maxChars: number,
  ) {}

  of(value: string): string {
    const v = cutLabel(value, this.maxChars);
    if (this.seen.has(v)) return v;
    if (this.seen.size >= this.maxValues) return OTHER_LABEL;
    this.seen.add(v);
    return v;
  }
}
