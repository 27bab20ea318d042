import type { ToolErrorType } from '../executor/contracts';
import { formatLocalTime } from '../agents/timezone';
import { canonicalRuleType, type ToolRule } from '../rules/tool-rule';
import type { LoopDecision, OutcomeView } from './loop-decision';

/**
 * The heartbeat message the loop writes when a batch goes on after a model turn, as Letta's loops write
 * it (letta/agents/letta_agent_v2.py `_decide_continuation`, letta_agent_v3.py, and
 * `create_heartbeat_system_message` in letta/server/rest_api/utils.py): a user message, stored with the
 * turn's step before the next model call, whose text is Letta's `get_heartbeat` JSON.
 */

/** Letta's NON_USER_MSG_PREFIX. */
const HIDDEN = '[This is an automated system message hidden from the user] ';

/** Letta's reasons, word for word (letta/constants.py and the loops). */
export const HEARTBEAT_REASONS = {
  /** REQ_HEARTBEAT_MESSAGE: the call asked for `request_heartbeat: true` (or went on without a rule). */
  requested: `${HIDDEN}Function called using request_heartbeat=true, returning control`,
  /** FUNC_FAILED_HEARTBEAT_MESSAGE: the call failed. */
  failed: `${HIDDEN}Function call failed, returning control`,
  ruleViolation: `${HIDDEN}Continuing: tool rule violation.`,
  denied: `${HIDDEN}Continuing: user denied request to call tool.`,
  childRule: `${HIDDEN}Continuing: child tool rule.`,
  continueRule: `${HIDDEN}Continuing: continue tool rule.`,
  /** After a call, with required_before_exit tools not yet called (the MemGPT loop). */
  expects: (tools: string[]) =>
    `${HIDDEN}Continuing, user expects these tools: [${tools.join(', ')}] to be called still.`,
  /** After an answer without a call, with required_before_exit tools not yet called. */
  mustCall: (tools: string[]) =>
    `${HIDDEN}ToolRuleViolated: You must call ${tools.join(', ')} at least once to exit the loop.`,
} as const;

/** Refusals Letta gives as a tool the rules did not allow (it never ran): an unknown tool is one there too. */
const RULE_REFUSALS: ReadonlySet<ToolErrorType> = new Set([
  'RuleViolation',
  'NotFound',
  'Deduplicated',
  'AlreadyExecuted',
]);

/** Letta's `has_children_tools`: a rule names the tool's children. */
const hasChildRule = (rules: ToolRule[], tool: string) =>
  rules.some(
    (r) =>
      'tool_name' in r &&
      r.tool_name === tool &&
      (r.type === 'constrain_child_tools' || canonicalRuleType(r.type) === 'conditional'),
  );
const hasContinueRule = (rules: ToolRule[], tool: string) =>
  rules.some((r) => r.type === 'continue_loop' && r.tool_name === tool);

export interface HeartbeatInput {
  /** The decision taken after the turn (`decideAfterTurn`). */
  decision: LoopDecision;
  /** The turn's outcomes, in call order (empty: the model answered without a call). */
  outcomes: OutcomeView[];
  rules: ToolRule[];
  /** letta_v1_agent's loop (Letta's LettaAgentV3), which writes none after calls. */
  v1Loop: boolean;
}

/**
 * The reason of the heartbeat to write before the next model call, or null when Letta writes none (the
 * batch ends or parks; the v1 loop after calls; a MemGPT call answered by a decision that asked for no
 * heartbeat, after which Letta would end the batch where this server goes on). Letta's MemGPT loop takes
 * one call a turn; with several, the first call that failed decides, else the one that asked for the
 * heartbeat, else the last one.
 */
export function heartbeatReason(input: HeartbeatInput): string | null {
  const { decision, outcomes, rules } = input;
  if (decision.kind === 'end' || decision.kind === 'park') return null;
  if (outcomes.length === 0)
    return decision.kind === 'remind' ? HEARTBEAT_REASONS.mustCall(decision.missing) : null;
  if (input.v1Loop) return null;
  if (decision.kind === 'remind') return HEARTBEAT_REASONS.expects(decision.missing);
  // a continuation after calls that ran (a decision answered): Letta goes on only after a heartbeat request
  if (decision.kind === 'continue' && decision.reason === 'after_tools')
    return outcomes.some((o) => o.requestHeartbeat) ? HEARTBEAT_REASONS.requested : null;
  const failed = outcomes.find((o) => o.kind === 'refused' || o.status === 'error');
  const asked =
    decision.kind === 'heartbeat'
      ? outcomes.find((o) => o.toolName === decision.toolName)
      : undefined;
  const call = failed ?? asked ?? outcomes[outcomes.length - 1];
  if (call.kind === 'refused' && call.error) {
    if (RULE_REFUSALS.has(call.error.type)) return HEARTBEAT_REASONS.ruleViolation;
    if (call.error.type === 'PermissionDenied') return HEARTBEAT_REASONS.denied;
  }
  // as Letta's `_decide_continuation`: the tool's rules give the reason whether the call succeeded or not
  if (hasChildRule(rules, call.toolName)) return HEARTBEAT_REASONS.childRule;
  if (decision.kind === 'continue' && decision.reason === 'child_rule')
    return HEARTBEAT_REASONS.childRule;
  if (hasContinueRule(rules, call.toolName)) return HEARTBEAT_REASONS.continueRule;
  return failed ? HEARTBEAT_REASONS.failed : HEARTBEAT_REASONS.requested;
}

/** Letta's `get_heartbeat`: its `json_dumps` (two-space indent), the time in the agent's zone. */
export function heartbeatText(reason: string, at: Date, timeZone: string): string {
  return JSON.stringify(
    { type: 'heartbeat', reason, time: formatLocalTime(at, timeZone) },
    null,
    2,
  );
}

/**
 * Whether a user message's content is a heartbeat, as Letta's message search decides it
 * (`MessageManager._extract_message_text`: its text parts joined by a space, trimmed, a JSON object of
 * `type: "heartbeat"`). Letta indexes none, so its search never answers one, whoever wrote it.
 */
export function isHeartbeatContent(content: unknown): boolean {
  const text = (
    typeof content === 'string'
      ? content
      : Array.isArray(content)
        ? content
            .map((p: unknown) =>
              typeof p === 'object' &&
              p !== null &&
              typeof (p as { text?: unknown }).text === 'string'
                ? (p as { text: string }).text
                : '',
            )
            .filter((t) => t !== '')
            .join(' ')
        : ''
  ).trim();
  if (!text.startsWith('{')) return false;
  try {
    const parsed: unknown = JSON.parse(text);
    return (
      typeof parsed === 'object' &&
      parsed !== null &&
      !Array.isArray(parsed) &&
      (parsed as { type?: unknown }).type === 'heartbeat'
    );
  } catch {
    return false;
  }
}
