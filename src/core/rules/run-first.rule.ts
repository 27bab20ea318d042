import { ALLOW, deny, list, RuleOf, RuleView, Verdict } from './verdict';

export type RunFirstRule = RuleOf<'run_first' | 'start_constraint'>;

/**
 * run_first (pass): until one start tool has run in this pass, only start tools may run. A start tool's
 * call that waits for consent in this turn runs before the later ones once approved: it meets the rule.
 */
export function checkRunFirst(
  startTools: ReadonlyMap<string, RunFirstRule>,
  tool: string,
  view: RuleView,
): Verdict {
  if (view.startConstraintsDone || startTools.size === 0 || startTools.has(tool)) return ALLOW;
  if (view.awaiting?.some((w) => startTools.has(w.toolName))) return ALLOW;
  const names = [...startTools.keys()];
  return deny(
    'RuleViolation',
    `${tool} may not run before a start tool (${list(names)}) has run in this pass`,
    startTools.get(names[0]),
  );
}
