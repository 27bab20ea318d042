import { ALLOW, deny, isWaiting, lastCall, RuleOf, RuleView, Verdict, waits } from './verdict';

export type ConditionalRule = RuleOf<'conditional'>;

/**
 * Letta semantics: the parent's output (the `message` field of a JSON object, else the whole value)
 * is compared with each mapping key as text (booleans case-insensitively). Returns the selected child,
 * `null` when nothing may run (no match and require_output_mapping), or `undefined` when any tool may.
 */
export function selectConditionalChild(
  rule: ConditionalRule,
  output: string,
): string | null | undefined {
  const value = outputValue(output);
  for (const [key, child] of Object.entries(rule.child_output_mapping)) {
    if (matches(value, key)) return child;
  }
  if (rule.default_child) return rule.default_child;
  return rule.require_output_mapping ? null : undefined;
}

/**
 * conditional (pass): right after tool_name, its output selects the tool that may run next. Right after a
 * call of tool_name that waits for consent in this turn the output is not known: only a tool every output
 * would allow may follow it now (the denial names the waiting call: the executor holds the call till then).
 */
export function checkConditional(rule: ConditionalRule, tool: string, view: RuleView): Verdict {
  const last = lastCall(view);
  if (!last || last.toolName !== rule.tool_name) return ALLOW;
  if (isWaiting(last)) {
    if (possibleChildren(rule).every((c) => c === undefined || c === tool)) return ALLOW;
    return deny(
      'RuleViolation',
      `the tool that may run after ${rule.tool_name} depends on its output, not known yet: ${waits(last)}; call ${tool} again once ${rule.tool_name} has run, if its output allows it`,
      rule,
      last,
    );
  }
  const child = selectConditionalChild(rule, last.returnValue);
  if (child === undefined || child === tool) return ALLOW;
  if (child === null) {
    return deny(
      'RuleViolation',
      `the output of ${rule.tool_name} matches no mapping, so nothing may run after it`,
      rule,
    );
  }
  return deny(
    'RuleViolation',
    `the output of ${rule.tool_name} selects ${child} as the next tool, not ${tool}`,
    rule,
  );
}

/** What an output could select: each mapping's child, and what no match gives (as selectConditionalChild). */
function possibleChildren(rule: ConditionalRule): (string | null | undefined)[] {
  const none = rule.default_child || (rule.require_output_mapping ? null : undefined);
  return [...Object.values(rule.child_output_mapping), none];
}

function outputValue(output: string): unknown {
  try {
    const parsed: unknown = JSON.parse(output);
    if (parsed !== null && typeof parsed === 'object' && 'message' in parsed) {
      return parsed.message;
    }
    return parsed;
  } catch {
    return output;
  }
}

function matches(value: unknown, key: string): boolean {
  if (typeof value === 'boolean') return String(value) === key.toLowerCase();
  if (typeof value === 'number') return Number(key) === value;
  if (typeof value === 'string') return value === key;
  return JSON.stringify(value) === key;
}
