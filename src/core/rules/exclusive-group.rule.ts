import { ALLOW, deny, RuleOf, RuleView, Verdict } from './verdict';

export type ExclusiveGroupRule = RuleOf<'exclusive_group'>;

const keys = new WeakMap<ExclusiveGroupRule, string>();

/** The key the batch state stores the group's claim under (memoised: it is on every call's path). */
export function groupKey(rule: ExclusiveGroupRule): string {
  let key = keys.get(rule);
  if (key === undefined) keys.set(rule, (key = rule.group ?? rule.tools.join(',')));
  return key;
}

/**
 * exclusive_group (batch): the first tool of the group used in a batch claims it for the batch; one that
 * waits for consent in this turn holds the claim meanwhile.
 */
export function checkExclusiveGroup(
  rule: ExclusiveGroupRule,
  tool: string,
  view: RuleView,
): Verdict {
  const claimedBy = view.batch.exclusiveGroups[groupKey(rule)];
  const waiting =
    claimedBy === undefined
      ? view.awaiting?.find((t) => t !== tool && rule.tools.includes(t))
      : undefined;
  if (claimedBy === tool || (claimedBy === undefined && waiting === undefined)) return ALLOW;
  return deny(
    'RuleViolation',
    waiting === undefined
      ? `${tool} is exclusive with ${claimedBy}, which this batch already used (group ${groupKey(rule)})`
      : `${tool} is exclusive with ${waiting}, which waits for consent in this batch (group ${groupKey(rule)})`,
    rule,
  );
}
