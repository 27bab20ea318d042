import { ALLOW, deny, lastExecution, list, RuleOf, RuleView, Verdict } from './verdict';

export type ParentLastRule = RuleOf<'parent_last_tool'>;

/**
 * parent_last_tool (pass): `children` may run only right after tool_name. A tool that is the child of
 * several parents may run right after any of them, so the check takes all rules naming it as a child.
 * Right after the parent only its children may run (`checkAfterParent`).
 */
export function checkParentLast(
  rules: readonly ParentLastRule[],
  tool: string,
  view: RuleView,
): Verdict {
  const last = lastExecution(view)?.toolName;
  if (rules.some((r) => r.tool_name === last)) return ALLOW;
  const parents = rules.map((r) => r.tool_name);
  return deny('RuleViolation', `${tool} may run only right after ${list(parents)}`, rules[0]);
}

/**
 * parent_last_tool (pass), the parent's side: right after tool_name only `children` may run, as Letta's
 * ParentToolRule allows (and the loop goes on to them, issue 4's "required next tool").
 */
export function checkAfterParent(rule: ParentLastRule, tool: string, view: RuleView): Verdict {
  if (lastExecution(view)?.toolName !== rule.tool_name || rule.children.includes(tool))
    return ALLOW;
  return deny(
    'RuleViolation',
    `right after ${rule.tool_name} only ${list(rule.children)} may run, not ${tool}`,
    rule,
  );
}
