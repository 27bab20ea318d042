import { ALLOW, deny, RuleOf, RuleView, Verdict } from './verdict';

export type ExclusiveGroupRule = RuleOf<'exclusive_group'>;

const keys = new WeakMap<ExclusiveGroupRule, string>();

/** The group's name in refusals (memoised: it is on every call's path). */
function groupKey(rule: ExclusiveGroupRule): string {
  let key = keys.get(rule);
  if (key === undefined) keys.set(rule, (key = rule.group ?? rule.tools.join(',')));
  return key;
}

/**
 * exclusive_group (batch): once a tool of the group ran in a batch, the others may not; one that waits
 * for consent in this turn holds the group meanwhile. Read from the batch's call counts, so a rule edited
 * mid-batch (its tools reordered or extended) still sees what ran.
 */
export function checkExclusiveGroup(
  rule: ExclusiveGroupRule,
  tool: string,
  view: RuleView,
): Verdict {
  const other = (t: string) => t !== tool && rule.tools.includes(t);
  const ran = rule.tools.find((t) => t !== tool && (view.batch.callCounts[t] ?? 0) > 0);
  const waiting =
    ran === undefined ? view.awaiting?.find((w) => other(w.toolName))?.toolName : undefined;
  if (ran === undefined && waiting === undefined) return ALLOW;
  return deny(
    'RuleViolation',
    ran !== undefined
      ? `${tool} is exclusive with ${ran}, which this batch already used (group ${groupKey(rule)})`
      : `${tool} is exclusive with ${waiting}, which waits for consent in this batch (group ${groupKey(rule)})`,
    rule,
  );
}
