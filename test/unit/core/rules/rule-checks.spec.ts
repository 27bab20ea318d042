import type { BatchState, ToolExecution } from '../../../../src/core/executor/contracts';
import {
  checkConditional,
  selectConditionalChild,
} from '../../../../src/core/rules/conditional.rule';
import { checkConstrainChild } from '../../../../src/core/rules/constrain-child-tools.rule';
import { checkCooldown } from '../../../../src/core/rules/cooldown.rule';
import {
  canonicalKey,
  checkDedupe,
  checkDedupeInTurn,
  dedupePolicy,
} from '../../../../src/core/rules/dedupe.rule';
import { checkExclusiveGroup } from '../../../../src/core/rules/exclusive-group.rule';
import { checkMaxCount } from '../../../../src/core/rules/max-count.rule';
import {
  checkAfterParent,
  checkParentLast,
} from '../../../../src/core/rules/parent-last-tool.rule';
import { renderRefusal } from '../../../../src/core/rules/render-refusal';
import { checkRequiresFollowing } from '../../../../src/core/rules/requires-following-tools.rule';
import { checkRequiresPreceding } from '../../../../src/core/rules/requires-preceding-tools.rule';
import { compileRules } from '../../../../src/core/rules/rule-index';
import { checkRunFirst } from '../../../../src/core/rules/run-first.rule';
import type { RuleView, Verdict } from '../../../../src/core/rules/verdict';
import { aTool, DEFAULT_SETTINGS } from '../executor/executor-harness';

/** `a b! c` = a ran, b failed, c ran (oldest first). */
function view(
  history = '',
  batch: Partial<BatchState> = {},
  extra: Partial<RuleView> = {},
): RuleView {
  const h: ToolExecution[] = history
    .split(' ')
    .filter(Boolean)
    .map((t, i) => ({
      toolCallId: `c${i}`,
      toolName: t.replace('!', ''),
      status: t.endsWith('!') ? 'error' : 'success',
      returnValue: `${t} ok`,
      at: 0,
    }));
  return {
    history: h,
    startConstraintsDone: false,
    batch: { callCounts: {}, createdAt: 0, updatedAt: 0, ...batch },
    now: 100_000,
    lastExecutionAt: null,
    ...extra,
  };
}
const show = (v: Verdict) => (v.allowed ? 'allowed' : v.detail);
/** `view(history)` with these calls of the turn waiting for consent (`call_7`, `call_8`, … in order). */
const waiting = (history: string, ...tools: string[]): RuleView =>
  view(
    history,
    {},
    { awaiting: tools.map((toolName, i) => ({ toolCallId: `call_${7 + i}`, toolName })) },
  );

describe('one table per rule: given rule, state, this call → verdict', () => {
  test.each<[string, Verdict, string]>([
    [
      'run_first: start tool',
      checkRunFirst(
        compileRules([], [{ type: 'run_first', tool_name: 'init' }]).startTools,
        'init',
        view(),
      ),
      'allowed',
    ],
    [
      'run_first: other tool first',
      checkRunFirst(
        compileRules([], [{ type: 'run_first', tool_name: 'init' }]).startTools,
        'x',
        view(),
      ),
      'x may not run before a start tool (init) has run in this pass',
    ],
    [
      'run_first: done',
      checkRunFirst(
        compileRules([], [{ type: 'run_first', tool_name: 'init' }]).startTools,
        'x',
        view('', {}, { startConstraintsDone: true }),
      ),
      'allowed',
    ],
    [
      'preceding: missing both',
      checkRequiresPreceding(
        { type: 'requires_preceding_tools', tool_name: 'd', tools: ['a', 'b'] },
        'd',
        view(),
      ),
      'd requires a, b earlier in this pass',
    ],
    [
      'preceding: one failed',
      checkRequiresPreceding(
        { type: 'requires_preceding_tools', tool_name: 'd', tools: ['a', 'b'] },
        'd',
        view('a b!'),
      ),
      'd requires b earlier in this pass',
    ],
    [
      'preceding: satisfied',
      checkRequiresPreceding(
        { type: 'requires_preceding_tools', tool_name: 'd', tools: ['a', 'b'] },
        'd',
        view('b a'),
      ),
      'allowed',
    ],
    [
      'following: a follower ran',
      checkRequiresFollowing(
        { type: 'requires_following_tools', tool_name: 'd', tools: ['a'] },
        'd',
        view('a!'),
      ),
      'd must run before a, which already ran in this pass',
    ],
    [
      'following: none ran',
      checkRequiresFollowing(
        { type: 'requires_following_tools', tool_name: 'd', tools: ['a'] },
        'd',
        view('b'),
      ),
      'allowed',
    ],
    [
      'child: after the parent, not a child',
      checkConstrainChild(
        { type: 'constrain_child_tools', tool_name: 'p', children: ['x'] },
        'y',
        view('p'),
      ),
      'right after p only x may run, not y',
    ],
    [
      'child: parent not last',
      checkConstrainChild(
        { type: 'constrain_child_tools', tool_name: 'p', children: ['x'] },
        'y',
        view('p a'),
      ),
      'allowed',
    ],
    [
      'parent_last: parent last',
      checkParentLast(
        [{ type: 'parent_last_tool', tool_name: 'p', children: ['x'] }],
        'x',
        view('p'),
      ),
      'allowed',
    ],
    [
      'parent_last: parent earlier',
      checkParentLast(
        [{ type: 'parent_last_tool', tool_name: 'p', children: ['x'] }],
        'x',
        view('p a'),
      ),
      'x may run only right after p',
    ],
    [
      'conditional: selects',
      checkConditional(
        { type: 'conditional', tool_name: 'a', child_output_mapping: { 'a ok': 'x' } },
        'y',
        view('a'),
      ),
      'the output of a selects x as the next tool, not y',
    ],
    [
      'conditional: required, no match',
      checkConditional(
        {
          type: 'conditional',
          tool_name: 'a',
          child_output_mapping: { z: 'x' },
          require_output_mapping: true,
        },
        'y',
        view('a'),
      ),
      'the output of a matches no mapping, so nothing may run after it',
    ],
    [
      'max: under',
      checkMaxCount(
        { type: 'max_count_per_step', tool_name: 'a', max_count_limit: 2 },
        'a',
        view('', { callCounts: { a: 1 } }),
      ),
      'allowed',
    ],
    [
      'max: at the limit',
      checkMaxCount(
        { type: 'max_calls', tool_name: 'a', max_count_limit: 2 },
        'a',
        view('', { callCounts: { a: 2 } }),
      ),
      'a reached its limit of 2 calls in this batch',
    ],
    [
      'group: claimed by another',
      checkExclusiveGroup(
        { type: 'exclusive_group', tools: ['a', 'b'], group: 'g' },
        'b',
        view('', { callCounts: { a: 1 } }),
      ),
      'b is exclusive with a, which this batch already used (group g)',
    ],
    [
      'group: claimed by itself',
      checkExclusiveGroup(
        { type: 'exclusive_group', tools: ['a', 'b'] },
        'a',
        view('', { callCounts: { a: 1 } }),
      ),
      'allowed',
    ],
    [
      'group: edited mid-batch (reordered, extended), what ran still holds it',
      checkExclusiveGroup(
        { type: 'exclusive_group', tools: ['c', 'b', 'a'] },
        'c',
        view('', { callCounts: { a: 1 } }),
      ),
      'c is exclusive with a, which this batch already used (group c,b,a)',
    ],
    [
      'cooldown: inside',
      checkCooldown(
        { type: 'cooldown', tool_name: 'a', seconds: 10 },
        'a',
        view('', {}, { lastExecutionAt: 95_500 }),
      ),
      'a is cooling down (10s between calls); it may run again in 6s',
    ],
    [
      'cooldown: at the edge',
      checkCooldown(
        { type: 'cooldown', tool_name: 'a', seconds: 10 },
        'a',
        view('', {}, { lastExecutionAt: 90_000 }),
      ),
      'allowed',
    ],
    [
      'cooldown: an earlier call of this turn waits for consent',
      checkCooldown(
        { type: 'cooldown', tool_name: 'a', seconds: 10 },
        'a',
        view('', {}, { awaiting: [{ toolCallId: 'call_7', toolName: 'a' }] }),
      ),
      'a is cooling down (10s between calls): its call call_7 in this turn waits for consent, and the cooldown starts when it runs',
    ],
    [
      'cooldown: inside, and a call waits: the running cooldown is what the model is told',
      checkCooldown(
        { type: 'cooldown', tool_name: 'a', seconds: 10 },
        'a',
        view(
          '',
          {},
          { lastExecutionAt: 95_500, awaiting: [{ toolCallId: 'call_7', toolName: 'a' }] },
        ),
      ),
      'a is cooling down (10s between calls); it may run again in 6s',
    ],
    [
      'cooldown: a call of another tool waits',
      checkCooldown(
        { type: 'cooldown', tool_name: 'a', seconds: 10 },
        'a',
        view('', {}, { awaiting: [{ toolCallId: 'call_7', toolName: 'b' }] }),
      ),
      'allowed',
    ],
    [
      'max: a call of this turn waits for consent',
      checkMaxCount(
        { type: 'max_count_per_step', tool_name: 'a', max_count_limit: 2 },
        'a',
        view('', { callCounts: { a: 1 } }, { awaiting: [{ toolCallId: 'call_7', toolName: 'a' }] }),
      ),
      'a reached its limit of 2 calls in this batch (counting 1 waiting for consent)',
    ],
    [
      'dedupe: an identical call of this turn waits for consent',
      checkDedupeInTurn({ mode: 'reject', windowMs: 60_000 }, 'a', 'a|{"x":1}', [
        { toolCallId: 'call_1', toolName: 'b', key: 'b|{"x":1}' },
        { toolCallId: 'call_2', toolName: 'a', key: 'a|{"x":1}' },
      ]),
      'a was already called with these arguments in this turn (call call_2, waiting for consent; dedupe window 60s); use its result once it runs, or change the arguments',
    ],
    [
      'dedupe: a call of this turn with other arguments waits',
      checkDedupeInTurn({ mode: 'return_cached', windowMs: 60_000 }, 'a', 'a|{"x":1}', [
        { toolCallId: 'call_2', toolName: 'a', key: 'a|{"x":2}' },
        { toolCallId: 'call_3', toolName: 'a' },
      ]),
      'allowed',
    ],
    [
      'dedupe: live entry',
      checkDedupe(
        { mode: 'reject', windowMs: 60_000 },
        'a',
        { at: 70_000, expiresAt: 130_000 },
        100_000,
      ),
      'a already ran with these arguments 30s ago (dedupe window 60s); use its earlier result or change the arguments',
    ],
    [
      'dedupe: expired',
      checkDedupe(
        { mode: 'reject', windowMs: 60_000 },
        'a',
        { at: 30_000, expiresAt: 90_000 },
        100_000,
      ),
      'allowed',
    ],
  ])('%s', (_s, verdict, expected) => {
    expect(show(verdict)).toBe(expected);
  });
});

describe('pass rules: a call of this turn that waits for consent counts as run, in order', () => {
  const startTools = compileRules([], [{ type: 'run_first', tool_name: 'init' }]).startTools;
  const mapping = (m: Record<string, string>, extra: object = {}) => ({
    type: 'conditional' as const,
    tool_name: 'a',
    child_output_mapping: m,
    ...extra,
  });
  test.each<[string, Verdict, string]>([
    [
      'run_first: a start tool waits',
      checkRunFirst(startTools, 'x', waiting('', 'init')),
      'allowed',
    ],
    [
      'run_first: another tool waits',
      checkRunFirst(startTools, 'x', waiting('', 'a')),
      'x may not run before a start tool (init) has run in this pass',
    ],
    [
      'child: the parent waits, not a child',
      checkConstrainChild(
        { type: 'constrain_child_tools', tool_name: 'p', children: ['x'] },
        'y',
        waiting('', 'p'),
      ),
      'right after p only x may run, not y (its call call_7 in this turn waits for consent and runs first)',
    ],
    [
      'child: the parent waits, a child',
      checkConstrainChild(
        { type: 'constrain_child_tools', tool_name: 'p', children: ['x'] },
        'x',
        waiting('', 'p'),
      ),
      'allowed',
    ],
    [
      'child: the parent ran, another call waits after it',
      checkConstrainChild(
        { type: 'constrain_child_tools', tool_name: 'p', children: ['x'] },
        'y',
        waiting('p', 'a'),
      ),
      'allowed',
    ],
    [
      'child: the parent waits before another waiting call',
      checkConstrainChild(
        { type: 'constrain_child_tools', tool_name: 'p', children: ['x'] },
        'y',
        waiting('', 'p', 'x'),
      ),
      'allowed',
    ],
    [
      'parent_last: the parent waits',
      checkParentLast(
        [{ type: 'parent_last_tool', tool_name: 'p', children: ['x'] }],
        'x',
        waiting('', 'p'),
      ),
      'allowed',
    ],
    [
      'parent_last: the parent ran, another call waits after it',
      checkParentLast(
        [{ type: 'parent_last_tool', tool_name: 'p', children: ['x'] }],
        'x',
        waiting('p', 'a'),
      ),
      'x may run only right after p, and it comes right after a (its call call_7 in this turn waits for consent)',
    ],
    [
      'parent_last, the parent side: the parent waits, not a child',
      checkAfterParent(
        { type: 'parent_last_tool', tool_name: 'p', children: ['x'] },
        'y',
        waiting('', 'p'),
      ),
      'right after p only x may run, not y (its call call_7 in this turn waits for consent and runs first)',
    ],
    [
      'conditional: the parent waits, its output selects one or another',
      checkConditional(mapping({ yes: 'x', no: 'y' }), 'y', waiting('', 'a')),
      'the tool that may run after a depends on its output, not known yet: its call call_7 in this turn waits for consent; call y again once a has run, if its output allows it',
    ],
    [
      'conditional: the parent waits, no match lets any tool run but a match selects x',
      checkConditional(mapping({ yes: 'x' }), 'y', waiting('', 'a')),
      'the tool that may run after a depends on its output, not known yet: its call call_7 in this turn waits for consent; call y again once a has run, if its output allows it',
    ],
    [
      'conditional: the parent waits, every output selects y',
      checkConditional(
        mapping({ yes: 'y', no: 'y' }, { default_child: 'y' }),
        'y',
        waiting('', 'a'),
      ),
      'allowed',
    ],
    [
      'conditional: the parent waits, every match selects y and no match lets any tool run',
      checkConditional(mapping({ yes: 'y' }), 'y', waiting('', 'a')),
      'allowed',
    ],
    [
      'conditional: the parent waits, a required mapping that may match nothing',
      checkConditional(
        mapping({ yes: 'y' }, { require_output_mapping: true }),
        'y',
        waiting('', 'a'),
      ),
      'the tool that may run after a depends on its output, not known yet: its call call_7 in this turn waits for consent; call y again once a has run, if its output allows it',
    ],
    [
      'conditional: the parent ran (its output known), another call waits after it',
      checkConditional(mapping({ 'a ok': 'x' }), 'y', waiting('a', 'b')),
      'allowed',
    ],
    [
      'preceding: the required tool waits (whether it succeeds is not known)',
      checkRequiresPreceding(
        { type: 'requires_preceding_tools', tool_name: 'd', tools: ['a'] },
        'd',
        waiting('', 'a'),
      ),
      'd requires a earlier in this pass; whether a succeeds is not known yet: its call call_7 in this turn waits for consent; call d again once it has run',
    ],
    [
      'preceding: it ran successfully earlier, and a call of it waits again',
      checkRequiresPreceding(
        { type: 'requires_preceding_tools', tool_name: 'd', tools: ['a'] },
        'd',
        waiting('a', 'a'),
      ),
      'allowed',
    ],
    [
      'preceding: another tool waits',
      checkRequiresPreceding(
        { type: 'requires_preceding_tools', tool_name: 'd', tools: ['a'] },
        'd',
        waiting('', 'b'),
      ),
      'd requires a earlier in this pass',
    ],
    [
      'following: a follower waits (it runs first once approved)',
      checkRequiresFollowing(
        { type: 'requires_following_tools', tool_name: 'd', tools: ['a'] },
        'd',
        waiting('', 'b', 'a'),
      ),
      'd must run before a, which comes before it (its call call_8 in this turn waits for consent and runs first)',
    ],
    [
      'following: another tool waits',
      checkRequiresFollowing(
        { type: 'requires_following_tools', tool_name: 'd', tools: ['a'] },
        'd',
        waiting('', 'b'),
      ),
      'allowed',
    ],
  ])('%s', (_s, verdict, expected) => {
    expect(show(verdict)).toBe(expected);
  });
});

describe('dedupe policy and key', () => {
  test.each<[string, ReturnType<typeof dedupePolicy>, string]>([
    [
      'side_effecting default',
      dedupePolicy(aTool('a', 'side_effecting'), undefined, undefined, DEFAULT_SETTINGS),
      'reject 300000',
    ],
    [
      'privileged default',
      dedupePolicy(aTool('a', 'privileged'), undefined, undefined, DEFAULT_SETTINGS),
      'reject 300000',
    ],
    ['read_only default', dedupePolicy(aTool('a'), undefined, undefined, DEFAULT_SETTINGS), 'off'],
    [
      'agent window 0 turns the default off',
      dedupePolicy(aTool('a', 'side_effecting'), undefined, undefined, {
        ...DEFAULT_SETTINGS,
        dedupeWindowMs: 0,
      }),
      'off',
    ],
    [
      'own rule beats "*"',
      dedupePolicy(
        aTool('a'),
        { type: 'dedupe', tool_name: 'a', window_seconds: 5, mode: 'return_cached' },
        { type: 'dedupe', tool_name: '*', window_seconds: 9, mode: 'reject' },
        DEFAULT_SETTINGS,
      ),
      'return_cached 5000',
    ],
    [
      'mode off',
      dedupePolicy(
        aTool('a', 'side_effecting'),
        { type: 'dedupe', tool_name: 'a', window_seconds: 5, mode: 'off' },
        undefined,
        DEFAULT_SETTINGS,
      ),
      'off',
    ],
  ])('%s → %s', (_s, policy, expected) => {
    expect(policy === null ? 'off' : `${policy.mode} ${policy.windowMs}`).toBe(expected);
  });

  it('the canonical key sorts keys', () => {
    expect(canonicalKey('t', { b: 1, a: { d: 2, c: 3 } })).toBe('t|{"a":{"c":3,"d":2},"b":1}');
  });

  it('selectConditionalChild reads the message field of JSON outputs', () => {
    const rule = {
      type: 'conditional' as const,
      tool_name: 'a',
      child_output_mapping: { go: 'x' },
    };
    expect([
      selectConditionalChild(rule, '{"message":"go"}'),
      selectConditionalChild(rule, 'stop'),
    ]).toEqual(['x', undefined]);
  });

  it('renders texts in one shape', () => {
    expect(renderRefusal('NotFound', 'no tool named q', ['a', 'b'])).toBe(
      '[ToolNotFound] no tool named q; available: a, b',
    );
    expect(renderRefusal('RuleViolation', 'x', [])).toBe(
      '[ToolRuleViolation] x; allowed now: none',
    );
    expect(renderRefusal('Timeout', 'slow')).toBe('[ToolTimeout] slow');
  });
});

describe('consent rules: patterns', () => {
  const tools = ['delete_user', 'delete_file', 'deleted_report', 'list_users'].map((n) => aTool(n));
  it('a pattern guards every tool it matches; a tool’s own rule wins whatever the order', () => {
    const idx = compileRules(tools, [
      { type: 'requires_consent', tool_name: 'delete_*', scope: 'deletions' },
      { type: 'requires_consent', tool_name: 'delete_file', scope: 'files' },
    ]);
    expect(Object.fromEntries([...idx.consent].map(([t, r]) => [t, r.scope]))).toEqual({
      delete_user: 'deletions',
      delete_file: 'files',
    });
  });
});
