import { ALLOW, deny, RuleOf, RuleView, Verdict } from './verdict';

export type CooldownRule = RuleOf<'cooldown'>;

/** cooldown (persistent): no execution within `seconds` of the tool's last one, across batches. */
export function checkCooldown(rule: CooldownRule, tool: string, view: RuleView): Verdict {
  if (view.lastExecutionAt === null) return ALLOW;
  const readyAt = view.lastExecutionAt + rule.seconds * 1000;
  if (view.now >= readyAt) return ALLOW;
  const wait = Math.ceil((readyAt - view.now) / 1000);
  return deny(
    'RuleViolation',
    `${tool} is cooling down (${rule.seconds}s between calls); it may run again in ${wait}s`,
    rule,
  );
}
