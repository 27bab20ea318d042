import { ALLOW, deny, RuleOf, RuleView, Verdict, waitingCallOf, waits } from './verdict';

export type CooldownRule = RuleOf<'cooldown'>;

/**
 * cooldown (persistent): no execution within `seconds` of the tool's last one, across batches. An earlier
 * call of this turn that waits for consent runs first once approved, so it holds the cooldown meanwhile.
 */
export function checkCooldown(rule: CooldownRule, tool: string, view: RuleView): Verdict {
  if (view.lastExecutionAt !== null) {
    const readyAt = view.lastExecutionAt + rule.seconds * 1000;
    if (view.now < readyAt) {
      const wait = Math.ceil((readyAt - view.now) / 1000);
      return deny(
        'RuleViolation',
        `${tool} is cooling down (${rule.seconds}s between calls); it may run again in ${wait}s`,
        rule,
      );
    }
  }
  const waiting = waitingCallOf(view, tool);
  if (waiting === undefined) return ALLOW;
  return deny(
    'RuleViolation',
    `${tool} is cooling down (${rule.seconds}s between calls): ${waits(waiting)}, and the cooldown starts when it runs`,
    rule,
  );
}
