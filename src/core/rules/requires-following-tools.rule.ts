import { ALLOW, deny, hasRun, RuleOf, RuleView, Verdict, waitingCallOf, waits } from './verdict';

export type RequiresFollowingRule = RuleOf<'requires_following_tools'>;

/**
 * requires_following_tools (pass): tool_name may not run once any of `tools` has run in this pass, or
 * comes before it in this turn waiting for consent (once approved it runs first).
 * (Once it has run, the executor adds `tools` to the batch's exit requirements.)
 */
export function checkRequiresFollowing(
  rule: RequiresFollowingRule,
  tool: string,
  view: RuleView,
): Verdict {
  const ran = rule.tools.find((t) => hasRun(view, t, false));
  if (ran !== undefined)
    return deny(
      'RuleViolation',
      `${tool} must run before ${ran}, which already ran in this pass`,
      rule,
    );
  let w;
  for (const t of rule.tools) if ((w = waitingCallOf(view, t))) break;
  if (w === undefined) return ALLOW;
  return deny(
    'RuleViolation',
    `${tool} must run before ${w.toolName}, which comes before it (${waits(w)} and runs first)`,
    rule,
    w,
  );
}
