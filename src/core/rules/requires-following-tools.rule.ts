import { ALLOW, deny, hasRun, RuleOf, RuleView, Verdict } from './verdict';

export type RequiresFollowingRule = RuleOf<'requires_following_tools'>;

/**
 * requires_following_tools (pass): tool_name may not run once any of `tools` has run in this pass.
 * (Once it has run, the executor adds `tools` to the batch's exit requirements.)
 */
export function checkRequiresFollowing(
  rule: RequiresFollowingRule,
  tool: string,
  view: RuleView,
): Verdict {
  const ran = rule.tools.find((t) => hasRun(view, t, false));
  if (ran === undefined) return ALLOW;
  return deny(
    'RuleViolation',
    `${tool} must run before ${ran}, which already ran in this pass`,
    rule,
  );
}
