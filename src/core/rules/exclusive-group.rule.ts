import { ALLOW, deny, RuleOf, RuleView, Verdict } from './verdict';

export type ExclusiveGroupRule = RuleOf<'exclusive_group'>;

const keys = new WeakMap<ExclusiveGroupRule, string>();

/** The key the batch state stores the group's claim under (memoised: it is on every call's path). */
export function groupKey(rule: ExclusiveGroupRule): string {
  let key = keys.get(rule);
  if (key === undefined) keys.set(rule, (key = rule.group ?? rule.tools.join(',')));
  return key;
}

/** exclusive_group (batch): the first tool of the group used in a batch claims it for the batch. */
export function checkExclusiveGroup(
  rule: ExclusiveGroupRule,
  tool: string,
  view: RuleView,
): Verdict {
  const claimedBy = view.batch.exclusiveGroups[groupKey(rule)];
  if (claimedBy === undefined || claimedBy === tool) return ALLOW;
  return deny(
    'RuleViolation',
    `${tool} is exclusive with ${claimedBy}, which this batch already used (group ${groupKey(rule)})`,
    rule,
  );
}
