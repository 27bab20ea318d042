import { type OutcomeKind, parksOn, type ToolErrorType } from '../executor/contracts';
import type { ToolRule } from '../rules/tool-rule';
import { canonicalRuleType } from '../rules/tool-rule';
import { selectConditionalChild } from '../rules/conditional.rule';

/**
 * The loop's decision after one model turn and its tool calls: data in, data out.
 * The AgentProcessor applies it; this file is the whole policy (issue 4, "The loop").
 */

/** What the decision needs to know of one call's outcome. */
export interface OutcomeView {
  toolName: string;
  kind: OutcomeKind;
  status: 'success' | 'error';
  requestHeartbeat: boolean;
  continueLoop: boolean;
  exitLoop: boolean;
  returnValue?: string;
  /** Why a refused call was refused (its heartbeat names a rule or a denial). */
  error?: { type: ToolErrorType };
}

export interface TurnView {
  /** The outcomes of this turn's calls, in call order (empty: the model made no call). */
  outcomes: OutcomeView[];
  /** required_before_exit / requires_following_tools not yet satisfied. */
  pendingExitRequirements: string[];
  /**
   * An exit_loop tool ran earlier in this pass (the executor's shouldExitLoop): once its exit requirements
   * have run, the batch ends, whatever the turn that ran them asked for.
   */
  exitRequested: boolean;
  /** The agent's rules, to find a required next tool after the last call. */
  rules: ToolRule[];
  /**
   * letta_v1_agent's loop: no heartbeats; after calls that ran the model is called again, and the batch
   * ends when it answers without a call (or a rule ends it). False: the MemGPT heartbeat loop.
   */
  continueAfterTools: boolean;
  /** Reminders already given in this pass. */
  remindersGiven: number;
  maxReminders: number;
}

export type ContinueReason = 'continue_loop' | 'child_rule' | 'self_correction' | 'after_tools';

export type LoopDecision =
  /** A call waits for a person, or for the client to run it: the run parks, the batch state is kept. */
  | { kind: 'park' }
  /** Next model call in the same pass. */
  | { kind: 'continue'; reason: ContinueReason; requiredNext?: string[] }
  /** Next model call in the same pass, after a reminder naming the required tools. */
  | { kind: 'remind'; missing: string[] }
  /** The pass ends; a heartbeat continuation of the same batch starts a new pass. */
  | { kind: 'heartbeat'; toolName: string }
  /** The batch ends. */
  | { kind: 'end'; stopReason: 'end_turn' | 'tool_rule' | 'tool_rule_violation' };

const ran = (o: OutcomeView) =>
  o.kind === 'executed' || o.kind === 'cached' || o.kind === 'timeout';
const failed = (o: OutcomeView) => o.kind === 'refused' || o.status === 'error';

/**
 * Tools the rules require right after `last` ran (Letta forces these): the children of a
 * constrain_child_tools or parent_last_tool rule on it, or the child a conditional rule maps its output to.
 */
export function requiredNextTools(rules: ToolRule[], last: OutcomeView | undefined): string[] {
  // a cached answer ran nothing: it sets no child rule (the executor's lastExecution skips it too)
  if (!last || last.kind !== 'executed' || last.status !== 'success') return [];
  const out = new Set<string>();
  for (const rule of rules) {
    if (!('tool_name' in rule) || rule.tool_name !== last.toolName) continue;
    const type = canonicalRuleType(rule.type);
    if (rule.type === 'constrain_child_tools' || rule.type === 'parent_last_tool') {
      rule.children.forEach((c) => out.add(c));
    } else if (type === 'conditional' && rule.type === 'conditional') {
      // the executor's own selection: what is forced is what it will admit
      const child = selectConditionalChild(rule, last.returnValue ?? '');
      if (child) out.add(child);
    }
  }
  return [...out];
}

/** Ending is allowed only when nothing is required; else a reminder, and after the last one a violation. */
function endOr(
  view: TurnView,
  stopReason: 'end_turn' | 'tool_rule',
): Extract<LoopDecision, { kind: 'remind' | 'end' }> {
  if (view.pendingExitRequirements.length === 0) return { kind: 'end', stopReason };
  if (view.remindersGiven < view.maxReminders) {
    return { kind: 'remind', missing: [...view.pendingExitRequirements] };
  }
  return { kind: 'end', stopReason: 'tool_rule_violation' };
}

export function decideAfterTurn(view: TurnView): LoopDecision {
  const { outcomes } = view;
  if (outcomes.some(parksOn)) return { kind: 'park' };
  if (outcomes.length === 0) return endOr(view, 'end_turn');

  // 1. an exit_loop tool ran in this pass, successfully or not (as Letta's terminal tools): the batch
  //    ends (exit requirements first). In Letta's MemGPT loop that is `tool_rule` only when the terminal
  //    call asked for a heartbeat (the rule overrode it); without one the turn ends as any call's (`end_turn`)
  const exitCall = outcomes.find((o) => ran(o) && o.exitLoop);
  if (view.exitRequested || exitCall) {
    const quiet = !view.continueAfterTools && exitCall !== undefined && !exitCall.requestHeartbeat;
    return endOr(view, quiet ? 'end_turn' : 'tool_rule');
  }
  // 2. continue in the same pass: a failed or refused call (self-correction), every call continue_loop,
  //    or the rules name the next tool
  if (outcomes.some(failed)) return { kind: 'continue', reason: 'self_correction' };
  const required = requiredNextTools(view.rules, outcomes[outcomes.length - 1]);
  if (required.length > 0)
    return { kind: 'continue', reason: 'child_rule', requiredNext: required };
  if (outcomes.every((o) => ran(o) && o.continueLoop)) {
    return { kind: 'continue', reason: 'continue_loop' };
  }
  // 3. the v1 loop goes on after any call that ran; the heartbeat loop only when one asked for it
  if (view.continueAfterTools && outcomes.some(ran))
    return { kind: 'continue', reason: 'after_tools' };
  const hb = outcomes.find((o) => ran(o) && o.requestHeartbeat);
  if (hb) return { kind: 'heartbeat', toolName: hb.toolName };
  // 4. otherwise the turn ends
  return endOr(view, 'end_turn');
}
