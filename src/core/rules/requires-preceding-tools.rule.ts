import {
  ALLOW,
  deny,
  hasRun,
  list,
  RuleOf,
  RuleView,
  Verdict,
  waitingCallOf,
  waits,
} from './verdict';

export type RequiresPrecedingRule = RuleOf<'requires_preceding_tools'>;

/**
 * requires_preceding_tools (pass): tool_name runs only after each of `tools` ran successfully in this pass.
 * A call of one of them that waits for consent in this turn has no status yet: not met now (when every
 * missing tool waits, the denial names one: the executor holds the call until they have run).
 */
export function checkRequiresPreceding(
  rule: RequiresPrecedingRule,
  tool: string,
  view: RuleView,
): Verdict {
  const missing = rule.tools.filter((t) => !hasRun(view, t, true));
  if (missing.length === 0) return ALLOW;
  let w;
  for (const t of missing) if ((w = waitingCallOf(view, t))) break;
  // the waiting calls decide it only when each missing tool has one
  const decides = missing.every((t) => waitingCallOf(view, t) !== undefined);
  return deny(
    'RuleViolation',
    `${tool} requires ${list(missing)} earlier in this pass${w ? `; whether ${w.toolName} succeeds is not known yet: ${waits(w)}; call ${tool} again once it has run` : ''}`,
    rule,
    decides ? w : undefined,
  );
}
