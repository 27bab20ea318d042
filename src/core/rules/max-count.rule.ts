import { ALLOW, deny, RuleOf, RuleView, Verdict } from './verdict';

export type MaxCountRule = RuleOf<'max_count_per_step' | 'max_calls'>;

/**
 * max_count_per_step (batch): at most max_count_limit executions of the tool per batch. The batch
 * counter counts executions (success or error) once per call, and calls of this turn that wait for
 * consent (a client's call is in the counter from its admission); `"*"` rules limit each tool separately.
 */
export function checkMaxCount(rule: MaxCountRule, tool: string, view: RuleView): Verdict {
  let waiting = 0;
  if (view.awaiting) for (const w of view.awaiting) if (w.toolName === tool && !w.client) waiting++;
  const used = (view.batch.callCounts[tool] ?? 0) + waiting;
  if (used < rule.max_count_limit) return ALLOW;
  return deny(
    'RuleViolation',
    `${tool} reached its limit of ${rule.max_count_limit} call${rule.max_count_limit === 1 ? '' : 's'} in this batch${waiting ? ` (counting ${waiting} waiting for consent)` : ''}`,
    rule,
  );
}
