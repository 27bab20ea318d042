import { ALLOW, deny, RuleOf, RuleView, Verdict } from './verdict';

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
  const waiting = view.awaiting?.find((w) => w.toolName === tool);
  if (waiting === undefined) return ALLOW;
  return deny(
    'RuleViolation',
    `${tool} is cooling down (${rule.seconds}s between calls): its call ${waiting.toolCallId} in this turn waits for consent, and the cooldown starts when it runs`,
    rule,
  );
}
