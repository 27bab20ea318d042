import {
  decideAfterTurn,
  LoopDecision,
  OutcomeView,
  requiredNextTools,
  TurnView,
} from '../../../../src/core/loop/loop-decision';
import type { ToolRule } from '../../../../src/core/rules/tool-rule';
import { ran, view } from './turn-views';

describe('decideAfterTurn', () => {
  const rows: [string, TurnView, LoopDecision][] = [
    ['no tool call ends the turn', view([]), { kind: 'end', stopReason: 'end_turn' }],
    [
      'a plain call without heartbeat ends the turn',
      view([ran('search')]),
      { kind: 'end', stopReason: 'end_turn' },
    ],
    [
      'request_heartbeat on a call that ran → heartbeat',
      view([ran('search', { requestHeartbeat: true })]),
      { kind: 'heartbeat', toolName: 'search' },
    ],
    [
      'continue_loop on every call → same pass',
      view([ran('a', { continueLoop: true }), ran('b', { continueLoop: true })]),
      { kind: 'continue', reason: 'continue_loop' },
    ],
    [
      'continue_loop on only one of two calls ends',
      view([ran('a', { continueLoop: true }), ran('b')]),
      { kind: 'end', stopReason: 'end_turn' },
    ],
    [
      'a refused call → self-correction in the same pass (not a heartbeat)',
      view([ran('a', { kind: 'refused', status: 'error', requestHeartbeat: false })]),
      { kind: 'continue', reason: 'self_correction' },
    ],
    [
      'a failed call with request_heartbeat → self-correction, not heartbeat',
      view([ran('a', { status: 'error', requestHeartbeat: true })]),
      { kind: 'continue', reason: 'self_correction' },
    ],
    [
      'a timed out call → self-correction',
      view([ran('a', { kind: 'timeout', status: 'error' })]),
      { kind: 'continue', reason: 'self_correction' },
    ],
    [
      'exit_loop ran asking for a heartbeat → the rule ends the batch: tool_rule',
      view([ran('done', { exitLoop: true, requestHeartbeat: true })]),
      { kind: 'end', stopReason: 'tool_rule' },
    ],
    [
      "exit_loop ran without a heartbeat (a memgpt agent's send_message) → end_turn, as Letta's MemGPT loop",
      view([ran('send_message', { exitLoop: true })]),
      { kind: 'end', stopReason: 'end_turn' },
    ],
    [
      'the same, as the executor reports it (its exit requested in this very turn) → end_turn',
      view([ran('send_message', { exitLoop: true })], { exitRequested: true }),
      { kind: 'end', stopReason: 'end_turn' },
    ],
    [
      'exit_loop ran and failed → the batch ends all the same (Letta: a terminal tool that was called)',
      view([ran('done', { exitLoop: true, status: 'error' })]),
      { kind: 'end', stopReason: 'end_turn' },
    ],
    [
      'exit_loop with exit requirements pending → reminder',
      view([ran('done', { exitLoop: true })], { pendingExitRequirements: ['save'] }),
      { kind: 'remind', missing: ['save'] },
    ],
    [
      'no call with requirements pending → reminder',
      view([], { pendingExitRequirements: ['save'], remindersGiven: 2 }),
      { kind: 'remind', missing: ['save'] },
    ],
    [
      'after max reminders → tool_rule_violation',
      view([], { pendingExitRequirements: ['save'], remindersGiven: 3 }),
      { kind: 'end', stopReason: 'tool_rule_violation' },
    ],
    [
      'max_reminders 0 → violation at once',
      view([], { pendingExitRequirements: ['save'], maxReminders: 0 }),
      { kind: 'end', stopReason: 'tool_rule_violation' },
    ],
    [
      'constrain_child_tools on the last tool → continue to its children',
      view([ran('plan')], {
        rules: [{ type: 'constrain_child_tools', tool_name: 'plan', children: ['act'] }],
      }),
      { kind: 'continue', reason: 'child_rule', requiredNext: ['act'] },
    ],
    [
      'consent_required → park, whatever else happened',
      view([ran('a', { continueLoop: true }), ran('pay', { kind: 'consent_required' })]),
      { kind: 'park' },
    ],
    [
      'an exit requested earlier in the pass, its requirement run now → the batch ends (not the heartbeat asked for)',
      view([ran('fin', { requestHeartbeat: true })], { exitRequested: true }),
      { kind: 'end', stopReason: 'tool_rule' },
    ],
    [
      'an exit requested earlier, another tool run, a requirement still pending → reminder',
      view([ran('look')], { exitRequested: true, pendingExitRequirements: ['fin'] }),
      { kind: 'remind', missing: ['fin'] },
    ],
    [
      'a cached answer counts as ran (heartbeat honoured)',
      view([ran('a', { kind: 'cached', requestHeartbeat: true })]),
      { kind: 'heartbeat', toolName: 'a' },
    ],
  ];
  it.each(rows)('%s', (_name, input, expected) => {
    expect(decideAfterTurn(input)).toEqual(expected);
  });
});

describe('decideAfterTurn, letta_v1_agent loop (continueAfterTools)', () => {
  const v1 = (outcomes: OutcomeView[], o: Partial<TurnView> = {}) =>
    view(outcomes, { continueAfterTools: true, ...o });
  const rows: [string, TurnView, LoopDecision][] = [
    ['a text answer ends the batch', v1([]), { kind: 'end', stopReason: 'end_turn' }],
    [
      'a call that ran → the model is called again in the same pass',
      v1([ran('search')]),
      { kind: 'continue', reason: 'after_tools' },
    ],
    [
      'a cached answer or a timeout counts as ran',
      v1([ran('a', { kind: 'cached' })]),
      { kind: 'continue', reason: 'after_tools' },
    ],
    [
      'request_heartbeat changes nothing: continue, never a heartbeat pass',
      v1([ran('search', { requestHeartbeat: true })]),
      { kind: 'continue', reason: 'after_tools' },
    ],
    [
      'a refused call → self-correction, as before',
      v1([ran('a', { kind: 'refused', status: 'error' })]),
      { kind: 'continue', reason: 'self_correction' },
    ],
    [
      'exit_loop ran → the batch ends with tool_rule',
      v1([ran('done', { exitLoop: true })]),
      { kind: 'end', stopReason: 'tool_rule' },
    ],
    [
      'exit_loop with required_before_exit pending → reminder',
      v1([ran('done', { exitLoop: true })], { pendingExitRequirements: ['save'] }),
      { kind: 'remind', missing: ['save'] },
    ],
    [
      'exit requested earlier, its requirement ran now → the batch ends with tool_rule',
      v1([ran('save')], { exitRequested: true }),
      { kind: 'end', stopReason: 'tool_rule' },
    ],
    [
      'a text answer with requirements pending → reminder',
      v1([], { pendingExitRequirements: ['save'] }),
      { kind: 'remind', missing: ['save'] },
    ],
    [
      'a child rule still names the next tool',
      v1([ran('plan')], {
        rules: [{ type: 'constrain_child_tools', tool_name: 'plan', children: ['act'] }],
      }),
      { kind: 'continue', reason: 'child_rule', requiredNext: ['act'] },
    ],
    [
      'consent or a client tool → park',
      v1([ran('a'), ran('pay', { kind: 'client_required' })]),
      { kind: 'park' },
    ],
  ];
  it.each(rows)('%s', (_name, input, expected) => {
    expect(decideAfterTurn(input)).toEqual(expected);
  });
});

describe('requiredNextTools', () => {
  const cond: ToolRule = {
    type: 'conditional',
    tool_name: 'check',
    child_output_mapping: { yes: 'go', '42': 'answer' },
    default_child: 'fallback',
  };
  const rows: [string, ToolRule[], OutcomeView | undefined, string[]][] = [
    ['nothing ran', [cond], undefined, []],
    ['conditional maps the output', [cond], ran('check', { returnValue: 'yes' }), ['go']],
    ['conditional maps JSON output', [cond], ran('check', { returnValue: '42' }), ['answer']],
    ['conditional default child', [cond], ran('check', { returnValue: 'no' }), ['fallback']],
    [
      'conditional reads the message field of a JSON output, as the executor does',
      [cond],
      ran('check', { returnValue: '{"message":"yes"}' }),
      ['go'],
    ],
    [
      'parent_last_tool names its children',
      [{ type: 'parent_last_tool', tool_name: 'p', children: ['c1', 'c2'] }],
      ran('p'),
      ['c1', 'c2'],
    ],
    [
      'a failed parent requires nothing',
      [{ type: 'constrain_child_tools', tool_name: 'p', children: ['c'] }],
      ran('p', { status: 'error' }),
      [],
    ],
    ['a rule on another tool', [cond], ran('other'), []],
    [
      'a cached answer ran nothing, so it names no child',
      [{ type: 'constrain_child_tools', tool_name: 'p', children: ['c'] }],
      ran('p', { kind: 'cached' }),
      [],
    ],
  ];
  it.each(rows)('%s', (_name, rules, last, expected) => {
    expect(requiredNextTools(rules, last)).toEqual(expected);
  });
});
