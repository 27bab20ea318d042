import { checkConditional } from './conditional.rule';
import { checkConstrainChild } from './constrain-child-tools.rule';
import { checkCooldown } from './cooldown.rule';
import { checkExclusiveGroup } from './exclusive-group.rule';
import { checkMaxCount } from './max-count.rule';
import { checkAfterParent, checkParentLast } from './parent-last-tool.rule';
import { checkRequiresFollowing } from './requires-following-tools.rule';
import { checkRequiresPreceding } from './requires-preceding-tools.rule';
import type { RuleIndex } from './rule-index';
import { checkRunFirst } from './run-first.rule';
import { ALLOW, lastCall, RuleView, Verdict } from './verdict';

/**
 * Pass rules (ordering), in a fixed order; the first denial wins. This turn's calls that wait for consent
 * or for the client's result (`view.awaiting`) count as run in order, the last of them as the last call.
 */
export function checkPassRules(idx: RuleIndex, tool: string, view: RuleView): Verdict {
  let v = checkRunFirst(idx.startTools, tool, view);
  if (!v.allowed) return v;
  const last = lastCall(view)?.toolName;
  if (last !== undefined) {
    const children = idx.childConstraints.get(last);
    if (children)
      for (const r of children) if (!(v = checkConstrainChild(r, tool, view)).allowed) return v;
    const conds = idx.conditionals.get(last);
    if (conds) for (const r of conds) if (!(v = checkConditional(r, tool, view)).allowed) return v;
    const next = idx.parentNext.get(last);
    if (next) for (const r of next) if (!(v = checkAfterParent(r, tool, view)).allowed) return v;
  }
  const parents = idx.parentLast.get(tool);
  if (parents && !(v = checkParentLast(parents, tool, view)).allowed) return v;
  const pre = idx.preceding.get(tool);
  if (pre) for (const r of pre) if (!(v = checkRequiresPreceding(r, tool, view)).allowed) return v;
  const fol = idx.following.get(tool);
  if (fol) for (const r of fol) if (!(v = checkRequiresFollowing(r, tool, view)).allowed) return v;
  return ALLOW;
}

/** Batch rules: max calls (own and `"*"`), exclusive groups. */
export function checkBatchRules(idx: RuleIndex, tool: string, view: RuleView): Verdict {
  let v: Verdict;
  const own = idx.maxCount.get(tool);
  if (own) for (const r of own) if (!(v = checkMaxCount(r, tool, view)).allowed) return v;
  for (const r of idx.maxCountStar) if (!(v = checkMaxCount(r, tool, view)).allowed) return v;
  const groups = idx.groups.get(tool);
  if (groups)
    for (const r of groups) if (!(v = checkExclusiveGroup(r, tool, view)).allowed) return v;
  return ALLOW;
}

/** Cooldown rules of the tool; `view.lastExecutionAt` must hold its last execution. */
export function checkCooldowns(idx: RuleIndex, tool: string, view: RuleView): Verdict {
  const rules = idx.cooldowns.get(tool);
  if (!rules) return ALLOW;
  let v: Verdict;
  for (const r of rules) if (!(v = checkCooldown(r, tool, view)).allowed) return v;
  return ALLOW;
}
