import { checkConstrainChild } from './constrain-child-tools.rule';
import {
  ALLOW,
  deny,
  isWaiting,
  lastCall,
  list,
  RuleOf,
  RuleView,
  Verdict,
  waits,
} from './verdict';

export type ParentLastRule = RuleOf<'parent_last_tool'>;

/**
 * parent_last_tool (pass): `children` may run only right after tool_name. A tool that is the child of
 * several parents may run right after any of them, so the check takes all rules naming it as a child.
 * Right after the parent only its children may run (`checkAfterParent`). A call of this turn that waits
 * for consent runs before the later ones once approved: it is their last call.
 */
export function checkParentLast(
  rules: readonly ParentLastRule[],
  tool: string,
  view: RuleView,
): Verdict {
  const last = lastCall(view);
  if (rules.some((r) => r.tool_name === last?.toolName)) return ALLOW;
  const parents = rules.map((r) => r.tool_name);
  return deny(
    'RuleViolation',
    `${tool} may run only right after ${list(parents)}${last && isWaiting(last) ? `, and it comes right after ${last.toolName} (${waits(last)})` : ''}`,
    rules[0],
    last && isWaiting(last) ? last : undefined,
  );
}

/**
 * parent_last_tool (pass), the parent's side: right after tool_name only `children` may run, as Letta's
 * ParentToolRule allows (and the loop goes on to them, issue 4's "required next tool").
 */
export const checkAfterParent: (rule: ParentLastRule, tool: string, view: RuleView) => Verdict =
  checkConstrainChild;
