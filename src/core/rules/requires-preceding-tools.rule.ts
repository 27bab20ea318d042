import { ALLOW, deny, hasRun, list, RuleOf, RuleView, Verdict } from './verdict';

export type RequiresPrecedingRule = RuleOf<'requires_preceding_tools'>;

/** requires_preceding_tools (pass): tool_name runs only after each of `tools` ran successfully in this pass. */
export function checkRequiresPreceding(
  rule: RequiresPrecedingRule,
  tool: string,
  view: RuleView,
): Verdict {
  const missing = rule.tools.filter((t) => !hasRun(view, t, true));
  if (missing.length === 0) return ALLOW;
  return deny('RuleViolation', `${tool} requires ${list(missing)} earlier in this pass`, rule);
}
