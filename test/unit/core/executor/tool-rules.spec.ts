import type { ToolRule } from '../../../../src/core/rules/tool-rule';
import type { ToolDefinition } from '../../../../src/core/tools/tool-definition';
import { aSetup, aTool, Harness } from './executor-harness';

/**
 * One scenario per row: given the rules, the script (see Harness.run) gives these codes.
 * Tools a–e are read_only unless the row says otherwise (so default dedupe stays out of the way).
 */
type Row = [
  scenario: string,
  rules: ToolRule[],
  script: string[],
  expected: string,
  tools?: ToolDefinition[],
];

const sideEffecting = ['a', 'b', 'c', 'd', 'e'].map((n) => aTool(n, 'side_effecting'));
const workflow = ['plan', 'z', 'act', 'run_tests', 'deploy', 'init'].map((n) => aTool(n));

const rows: Row[] = [
  // ---- run_first (pass)
  [
    'run_first: only the start tool may run first',
    [{ type: 'run_first', tool_name: 'a' }],
    ['b', 'a', 'b'],
    'RuleViolation ok ok',
  ],
  [
    'start_constraint alias behaves as run_first',
    [{ type: 'start_constraint', tool_name: 'a' }],
    ['b', 'a', 'b'],
    'RuleViolation ok ok',
  ],
  [
    'run_first: any of several start tools satisfies it',
    [
      { type: 'run_first', tool_name: 'a' },
      { type: 'run_first', tool_name: 'b' },
    ],
    ['c', 'b', 'c'],
    'RuleViolation ok ok',
  ],
  [
    'run_first: a heartbeat starts a new pass, start tool needed again',
    [{ type: 'run_first', tool_name: 'a' }],
    ['a', 'b', 'heartbeat', 'b', 'a', 'b'],
    'ok ok RuleViolation ok ok',
  ],
  [
    'run_first: a failed start tool still counts as run',
    [{ type: 'run_first', tool_name: 'a' }],
    ['a!', 'b'],
    'err ok',
  ],
  // ---- requires_preceding_tools (pass)
  [
    'requires_preceding: refused until each preceding tool ran',
    [{ type: 'requires_preceding_tools', tool_name: 'c', tools: ['a', 'b'] }],
    ['c', 'a', 'c', 'b', 'c'],
    'RuleViolation ok RuleViolation ok ok',
  ],
  [
    'requires_preceding: a failed preceding run does not satisfy it',
    [{ type: 'requires_preceding_tools', tool_name: 'b', tools: ['a'] }],
    ['a!', 'b', 'a', 'b'],
    'err RuleViolation ok ok',
  ],
  [
    'requires_preceding: a heartbeat resets it',
    [{ type: 'requires_preceding_tools', tool_name: 'b', tools: ['a'] }],
    ['a', 'b', 'heartbeat', 'b'],
    'ok ok RuleViolation',
  ],
  // ---- requires_following_tools (pass)
  [
    'requires_following: not after one of its followers',
    [{ type: 'requires_following_tools', tool_name: 'a', tools: ['b'] }],
    ['b', 'a'],
    'ok RuleViolation',
  ],
  [
    'requires_following: fine before its followers',
    [{ type: 'requires_following_tools', tool_name: 'a', tools: ['b'] }],
    ['a', 'b', 'c'],
    'ok ok ok',
  ],
  [
    'requires_following: a new pass forgets the followers ran',
    [{ type: 'requires_following_tools', tool_name: 'a', tools: ['b'] }],
    ['b', 'heartbeat', 'a'],
    'ok ok',
  ],
  // ---- constrain_child_tools (pass)
  [
    'constrain_child: right after the parent only children',
    [{ type: 'constrain_child_tools', tool_name: 'a', children: ['b', 'c'] }],
    ['a', 'd', 'b', 'd'],
    'ok RuleViolation ok ok',
  ],
  [
    'constrain_child: child chain a → b → c',
    [
      { type: 'constrain_child_tools', tool_name: 'a', children: ['b'] },
      { type: 'constrain_child_tools', tool_name: 'b', children: ['c'] },
    ],
    ['a', 'c', 'b', 'a', 'c'],
    'ok RuleViolation ok RuleViolation ok',
  ],
  [
    'constrain_child: a failed parent still constrains',
    [{ type: 'constrain_child_tools', tool_name: 'a', children: ['b'] }],
    ['a!', 'c', 'b'],
    'err RuleViolation ok',
  ],
  [
    'constrain_child: a refused call does not become the last tool',
    [
      { type: 'constrain_child_tools', tool_name: 'a', children: ['b'] },
      { type: 'max_count_per_step', tool_name: 'c', max_count_limit: 0 },
    ],
    ['a', 'c', 'd', 'b'],
    'ok RuleViolation RuleViolation ok',
  ],
  [
    'constrain_child: a heartbeat clears it',
    [{ type: 'constrain_child_tools', tool_name: 'a', children: ['b'] }],
    ['a', 'heartbeat', 'c'],
    'ok ok',
  ],
  // ---- parent_last_tool (pass)
  [
    'parent_last: children only right after the parent',
    [{ type: 'parent_last_tool', tool_name: 'a', children: ['b'] }],
    ['b', 'a', 'b', 'b'],
    'RuleViolation ok ok RuleViolation',
  ],
  [
    "parent_last: right after the parent only its children (Letta's ParentToolRule)",
    [{ type: 'parent_last_tool', tool_name: 'a', children: ['b'] }],
    ['a', 'c', 'a', 'b', 'c'],
    'ok RuleViolation RuleViolation ok ok',
  ],
  [
    'parent_last: either of two parents',
    [
      { type: 'parent_last_tool', tool_name: 'a', children: ['c'] },
      { type: 'parent_last_tool', tool_name: 'b', children: ['c'] },
    ],
    ['b', 'c', 'a', 'c'],
    'ok ok ok ok',
  ],
  // ---- conditional (pass): outputs set by the test below; here the default outputs "<name> ok"
  [
    'conditional: the output selects the child',
    [{ type: 'conditional', tool_name: 'a', child_output_mapping: { 'a ok': 'c' } }],
    ['a', 'b', 'c'],
    'ok RuleViolation ok',
  ],
  [
    'conditional: no match falls back to default_child',
    [
      {
        type: 'conditional',
        tool_name: 'a',
        child_output_mapping: { nope: 'c' },
        default_child: 'd',
      },
    ],
    ['a', 'c', 'd'],
    'ok RuleViolation ok',
  ],
  [
    'conditional: no match, no default: any tool',
    [{ type: 'conditional', tool_name: 'a', child_output_mapping: { nope: 'c' } }],
    ['a', 'b'],
    'ok ok',
  ],
  [
    'conditional: no match with require_output_mapping: nothing',
    [
      {
        type: 'conditional',
        tool_name: 'a',
        child_output_mapping: { nope: 'c' },
        require_output_mapping: true,
      },
    ],
    ['a', 'b', 'c'],
    'ok RuleViolation RuleViolation',
  ],
  // ---- required_before_exit: see the exit tests
  // ---- max_count_per_step (batch)
  [
    'max_calls: up to the limit',
    [{ type: 'max_count_per_step', tool_name: 'a', max_count_limit: 2 }],
    ['a', 'a', 'a', 'b'],
    'ok ok RuleViolation ok',
  ],
  [
    'max_calls alias',
    [{ type: 'max_calls', tool_name: 'a', max_count_limit: 1 }],
    ['a', 'a'],
    'ok RuleViolation',
  ],
  [
    'max_calls: failed executed calls count',
    [{ type: 'max_count_per_step', tool_name: 'a', max_count_limit: 2 }],
    ['a!', 'a!', 'a'],
    'err err RuleViolation',
  ],
  [
    'max_calls: refused calls do not count',
    [
      { type: 'max_count_per_step', tool_name: 'b', max_count_limit: 1 },
      { type: 'requires_preceding_tools', tool_name: 'b', tools: ['a'] },
    ],
    ['b', 'b', 'a', 'b', 'b'],
    'RuleViolation RuleViolation ok ok RuleViolation',
  ],
  [
    'max_calls: survives heartbeats',
    [{ type: 'max_count_per_step', tool_name: 'a', max_count_limit: 2 }],
    ['a', 'heartbeat', 'a', 'heartbeat', 'a'],
    'ok ok RuleViolation',
  ],
  [
    'max_calls: resets on a new batch',
    [{ type: 'max_count_per_step', tool_name: 'a', max_count_limit: 1 }],
    ['a', 'a', 'batch', 'a'],
    'ok RuleViolation ok',
  ],
  [
    'max_calls "*": each tool separately',
    [{ type: 'max_count_per_step', tool_name: '*', max_count_limit: 1 }],
    ['a', 'b', 'a', 'b', 'c'],
    'ok ok RuleViolation RuleViolation ok',
  ],
  [
    'max_calls "*" and own rule: the stricter wins, one call counts once',
    [
      { type: 'max_count_per_step', tool_name: '*', max_count_limit: 3 },
      { type: 'max_count_per_step', tool_name: 'a', max_count_limit: 2 },
    ],
    ['a', 'a', 'a', 'b', 'b', 'b', 'b'],
    'ok ok RuleViolation ok ok ok RuleViolation',
  ],
  [
    'max_calls: survives a restart in the same batch',
    [{ type: 'max_count_per_step', tool_name: 'a', max_count_limit: 1 }],
    ['a', 'restart', 'a'],
    'ok RuleViolation',
  ],
  // ---- exclusive_group (batch)
  [
    'exclusive_group: the first tool claims the group',
    [{ type: 'exclusive_group', tools: ['a', 'b'] }],
    ['a', 'b', 'a', 'c'],
    'ok RuleViolation ok ok',
  ],
  [
    'exclusive_group: claim survives heartbeats, not batches',
    [{ type: 'exclusive_group', tools: ['a', 'b'], group: 'deploy' }],
    ['b', 'heartbeat', 'a', 'batch', 'a', 'b'],
    'ok RuleViolation ok RuleViolation',
  ],
  [
    'exclusive_group: a refused call claims nothing',
    [
      { type: 'exclusive_group', tools: ['a', 'b'] },
      { type: 'requires_preceding_tools', tool_name: 'a', tools: ['c'] },
    ],
    ['a', 'b', 'c', 'a'],
    'RuleViolation ok ok RuleViolation',
  ],
  // ---- cooldown (persistent)
  [
    'cooldown: no second run within the window',
    [{ type: 'cooldown', tool_name: 'a', seconds: 60 }],
    ['a', '+30s', 'a', '+30s', 'a'],
    'ok RuleViolation ok',
  ],
  [
    'cooldown: spans batches',
    [{ type: 'cooldown', tool_name: 'a', seconds: 60 }],
    ['a', 'batch', 'a', '+60s', 'a'],
    'ok RuleViolation ok',
  ],
  [
    'cooldown: survives a restart',
    [{ type: 'cooldown', tool_name: 'a', seconds: 60 }],
    ['a', 'restart', 'a'],
    'ok RuleViolation',
  ],
  [
    'cooldown: a failed run starts the cooldown too',
    [{ type: 'cooldown', tool_name: 'a', seconds: 10 }],
    ['a!', 'a', '+10s', 'a'],
    'err RuleViolation ok',
  ],
  [
    'cooldown: a refused call does not start it',
    [
      { type: 'cooldown', tool_name: 'a', seconds: 60 },
      { type: 'requires_preceding_tools', tool_name: 'a', tools: ['b'] },
    ],
    ['a', 'b', 'a'],
    'RuleViolation ok ok',
  ],
  // ---- dedupe (persistent)
  [
    'dedupe default: side_effecting tools rejected within 300 s',
    [],
    ['a {"x":1}', 'a {"x":1}', 'a {"x":2}', '+300s', 'a {"x":1}'],
    'ok Deduplicated ok ok',
    sideEffecting,
  ],
  ['dedupe default: off for read_only tools', [], ['a {"x":1}', 'a {"x":1}'], 'ok ok'],
  [
    'dedupe: key ignores key order and request_heartbeat',
    [],
    ['a {"x":1,"y":2}', 'a {"y":2,"x":1,"request_heartbeat":true}'],
    'ok Deduplicated',
    sideEffecting,
  ],
  ['dedupe: errors are never cached', [], ['a!', 'a'], 'err ok', sideEffecting],
  [
    'dedupe: spans batches and restarts',
    [],
    ['a', 'batch', 'a', 'restart', 'a'],
    'ok Deduplicated Deduplicated',
    sideEffecting,
  ],
  [
    'dedupe rule: return_cached answers with the earlier result',
    [{ type: 'dedupe', tool_name: 'a', window_seconds: 60, mode: 'return_cached' }],
    ['a', 'a', '+60s', 'a'],
    'ok cached ok',
  ],
  [
    'dedupe rule: off overrides the default',
    [{ type: 'dedupe', tool_name: 'a', window_seconds: 60, mode: 'off' }],
    ['a', 'a'],
    'ok ok',
    sideEffecting,
  ],
  [
    'dedupe rule: own window overrides the default',
    [{ type: 'dedupe', tool_name: 'a', window_seconds: 10, mode: 'reject' }],
    ['a', '+10s', 'a'],
    'ok ok',
    sideEffecting,
  ],
  [
    'dedupe "*": applies to read_only tools too',
    [{ type: 'dedupe', tool_name: '*', window_seconds: 60, mode: 'reject' }],
    ['a', 'a', 'b'],
    'ok Deduplicated ok',
  ],
  [
    'dedupe comes first (issue 3): a duplicate past a limit is refused as a duplicate',
    [{ type: 'max_count_per_step', tool_name: 'a', max_count_limit: 1 }],
    ['a', 'a'],
    'ok Deduplicated',
    sideEffecting,
  ],
  [
    'a cached answer ran nothing: after plan only act, still, once z is answered from the cache',
    [
      { type: 'constrain_child_tools', tool_name: 'plan', children: ['act'] },
      { type: 'dedupe', tool_name: 'z', window_seconds: 300, mode: 'return_cached' },
    ],
    ['z', 'batch', 'plan', 'z', 'deploy', 'act'],
    'ok ok cached RuleViolation ok',
    workflow,
  ],
  [
    'a cached answer comes before a cooldown (issue 3 order): the earlier result, nothing runs',
    [
      { type: 'cooldown', tool_name: 'z', seconds: 60 },
      { type: 'dedupe', tool_name: 'z', window_seconds: 300, mode: 'return_cached' },
    ],
    ['z', 'batch', 'z'],
    'ok cached',
    workflow,
  ],
  [
    'a cached answer meets no prerequisite: deploy still needs run_tests to run',
    [
      { type: 'requires_preceding_tools', tool_name: 'deploy', tools: ['run_tests'] },
      { type: 'dedupe', tool_name: '*', window_seconds: 300, mode: 'return_cached' },
    ],
    ['run_tests', 'batch', 'run_tests', 'deploy'],
    'ok cached RuleViolation',
    workflow,
  ],
  [
    'a cached start tool meets run_first (no loop on a cached init)',
    [
      { type: 'run_first', tool_name: 'init' },
      { type: 'dedupe', tool_name: 'init', window_seconds: 300, mode: 'return_cached' },
    ],
    ['init', 'batch', 'init', 'act'],
    'ok cached ok',
    workflow,
  ],
  // ---- unknown tools
  [
    'unknown tool is NotFound and not counted',
    [{ type: 'max_count_per_step', tool_name: '*', max_count_limit: 1 }],
    ['zzz', 'a'],
    'NotFound ok',
  ],
];

describe('tool rules, one scenario per row', () => {
  // Objects, not tuples: a 5-parameter callback over a 4-element row would be taken for `done`.
  const cases = rows.map(([scenario, rules, script, expected, tools]) => ({
    scenario,
    rules,
    script,
    expected,
    tools,
  }));
  test.each(cases)('$scenario', async ({ rules, script, expected, tools }) => {
    const h = new Harness(aSetup(rules, tools));
    expect(await h.run(script)).toBe(expected);
  });
});

describe('conditional mapping over JSON outputs', () => {
  test.each<[string, string, string]>([
    ['a JSON message field selects', '{"message":"yes"}', 'b'],
    ['a boolean output matches "true"', 'true', 'c'],
    ['a number output matches "42"', '42', 'd'],
    ['anything else gets the default child', '"maybe"', 'e'],
  ])('%s', async (_s, output, expectedChild) => {
    const rules: ToolRule[] = [
      {
        type: 'conditional',
        tool_name: 'a',
        child_output_mapping: { yes: 'b', true: 'c', '42': 'd' },
        default_child: 'e',
      },
    ];
    const h = new Harness(aSetup(rules));
    h.invoker.outputs.set('a', output);
    await h.call('a');
    expect(await h.executor.allowedTools(h.setup, h.pass)).toEqual({
      tools: [expectedChild],
      force: expectedChild,
    });
  });
});
