import { ALLOW, deny, lastExecution, list, RuleOf, RuleView, Verdict } from './verdict';

export type ConstrainChildRule = RuleOf<'constrain_child_tools'>;

/** constrain_child_tools (pass): right after tool_name, only `children` may run. */
export function checkConstrainChild(
  rule: ConstrainChildRule,
  tool: string,
  view: RuleView,
): Verdict {
  if (lastExecution(view)?.toolName !== rule.tool_name || rule.children.includes(tool)) {
    return ALLOW;
  }
  return deny(
    'RuleViolation',
    `right after ${rule.tool_name} only ${list(rule.children)} may run, not ${tool}`,
    rule,
  );
}
