import {
  HEARTBEAT_REASONS as R,
  heartbeatReason,
  HeartbeatInput,
  heartbeatText,
  isHeartbeatContent,
} from '../../../../src/core/loop/heartbeat-message';
import type { LoopDecision, OutcomeView } from '../../../../src/core/loop/loop-decision';
import type { ToolRule } from '../../../../src/core/rules/tool-rule';
import { ran } from './turn-views';

const refused = (toolName: string, type: NonNullable<OutcomeView['error']>['type']) =>
  ran(toolName, { kind: 'refused', status: 'error', error: { type } });

const go = (reason: Extract<LoopDecision, { kind: 'continue' }>['reason']): LoopDecision => ({
  kind: 'continue',
  reason,
});
const remind: LoopDecision = { kind: 'remind', missing: ['save', 'log'] };
const continueRule: ToolRule = { type: 'continue_loop', tool_name: 'lookup' };
const childRule: ToolRule = { type: 'constrain_child_tools', tool_name: 'plan', children: ['act'] };

const memgpt = (
  decision: LoopDecision,
  outcomes: OutcomeView[],
  rules: ToolRule[] = [],
): HeartbeatInput => ({ decision, outcomes, rules, v1Loop: false });
const v1 = (decision: LoopDecision, outcomes: OutcomeView[], rules: ToolRule[] = []) => ({
  ...memgpt(decision, outcomes, rules),
  v1Loop: true,
});

/** Letta's `_decide_continuation` (letta_agent_v2.py / _v3.py), one row per reason it gives. */
describe('heartbeatReason: the heartbeat Letta writes before the next model call', () => {
  const rows: [string, HeartbeatInput, string | null][] = [
    [
      'request_heartbeat on a call that ran → REQ_HEARTBEAT_MESSAGE',
      memgpt({ kind: 'heartbeat', toolName: 'lookup' }, [
        ran('lookup', { requestHeartbeat: true }),
      ]),
      R.requested,
    ],
    [
      'continue_loop → "Continuing: continue tool rule."',
      memgpt(go('continue_loop'), [ran('lookup', { continueLoop: true })], [continueRule]),
      R.continueRule,
    ],
    [
      'a child rule → "Continuing: child tool rule."',
      memgpt(go('child_rule'), [ran('plan')], [childRule]),
      R.childRule,
    ],
    [
      'a call a rule refused → "Continuing: tool rule violation."',
      memgpt(go('self_correction'), [refused('act', 'RuleViolation')]),
      R.ruleViolation,
    ],
    [
      'an unknown tool (not among the allowed, as Letta sees it) → tool rule violation',
      memgpt(go('self_correction'), [refused('nope', 'NotFound')]),
      R.ruleViolation,
    ],
    [
      'a person denied the call → "Continuing: user denied request to call tool."',
      memgpt(go('self_correction'), [refused('pay', 'PermissionDenied')]),
      R.denied,
    ],
    [
      'the tool failed → FUNC_FAILED_HEARTBEAT_MESSAGE',
      memgpt(go('self_correction'), [ran('lookup', { status: 'error' })]),
      R.failed,
    ],
    [
      'invalid arguments (Letta runs the tool, which fails) → FUNC_FAILED_HEARTBEAT_MESSAGE',
      memgpt(go('self_correction'), [refused('lookup', 'InvalidArguments')]),
      R.failed,
    ],
    [
      "a failed call of a continue_loop tool → the rule's reason, as Letta's",
      memgpt(go('self_correction'), [ran('lookup', { status: 'error' })], [continueRule]),
      R.continueRule,
    ],
    [
      'of several calls, the first that failed decides',
      memgpt(go('self_correction'), [
        ran('lookup', { continueLoop: true }),
        refused('act', 'RuleViolation'),
        ran('plan', { status: 'error' }),
      ]),
      R.ruleViolation,
    ],
    [
      'a reminder after a call → "Continuing, user expects these tools: [..] to be called still."',
      memgpt(remind, [ran('finish', { exitLoop: true })]),
      `[This is an automated system message hidden from the user] Continuing, user expects these tools: [save, log] to be called still.`,
    ],
    [
      'a reminder after an answer without a call → "ToolRuleViolated: You must call .. at least once"',
      memgpt(remind, []),
      `[This is an automated system message hidden from the user] ToolRuleViolated: You must call save, log at least once to exit the loop.`,
    ],
    [
      'a decision answered, the call asked for a heartbeat → REQ_HEARTBEAT_MESSAGE',
      memgpt(go('after_tools'), [ran('pay', { requestHeartbeat: true })]),
      R.requested,
    ],
    [
      'a decision answered, no heartbeat asked (Letta would end the batch) → none',
      memgpt(go('after_tools'), [ran('pay')]),
      null,
    ],
    ['the batch ends → none', memgpt({ kind: 'end', stopReason: 'end_turn' }, [ran('a')]), null],
    ['the batch parks → none', memgpt({ kind: 'park' }, [ran('a')]), null],
    [
      'v1 loop: after calls, none (Letta v3 writes no heartbeat after tool calls)',
      v1(go('continue_loop'), [ran('lookup', { continueLoop: true })], [continueRule]),
      null,
    ],
    ['v1 loop: a failed call → none', v1(go('self_correction'), [refused('a', 'NotFound')]), null],
    ['v1 loop: a reminder after a call → none', v1(remind, [ran('finish')]), null],
    [
      'v1 loop: a text answer with required tools not called → ToolRuleViolated',
      v1(remind, []),
      R.mustCall(['save', 'log']),
    ],
  ];
  it.each(rows)('%s', (_name, input, expected) => {
    expect(heartbeatReason(input)).toEqual(expected);
  });

  it("Letta's texts, word for word", () => {
    expect(R.requested).toBe(
      '[This is an automated system message hidden from the user] Function called using request_heartbeat=true, returning control',
    );
    expect(R.failed).toBe(
      '[This is an automated system message hidden from the user] Function call failed, returning control',
    );
    expect(R.continueRule).toBe(
      '[This is an automated system message hidden from the user] Continuing: continue tool rule.',
    );
  });

  it("heartbeatText is Letta's get_heartbeat: json_dumps with a two-space indent", () => {
    const at = new Date('2025-01-15T17:30:05Z');
    expect(heartbeatText(R.childRule, at, 'UTC')).toBe(
      [
        '{',
        '  "type": "heartbeat",',
        '  "reason": "[This is an automated system message hidden from the user] Continuing: child tool rule.",',
        '  "time": "2025-01-15 05:30:05 PM UTC+0000"',
        '}',
      ].join('\n'),
    );
  });

  // Letta's MessageManager._extract_message_text: what its message search leaves out
  it.each([
    ["the loop's heartbeat", heartbeatText(R.requested, new Date(0), 'UTC'), true],
    ['compact, with spaces around', '  {"type":"heartbeat"}\n', true],
    [
      'its text parts, joined by a space',
      [
        { type: 'text', text: '{"type":' },
        { type: 'text', text: '"heartbeat"}' },
      ],
      true,
    ],
    ['another type', '{"type": "system_alert", "message": "x"}', false],
    ['a nested heartbeat', '{"event": {"type": "heartbeat"}}', false],
    ['a list', '[{"type": "heartbeat"}]', false],
    ['not JSON', '{"type": "heartbeat"', false],
    ['words about a heartbeat', 'type: heartbeat', false],
    ['no content', undefined, false],
  ])('isHeartbeatContent: %s → %s', (_name, content, expected) => {
    expect(isHeartbeatContent(content)).toBe(expected);
  });
});
