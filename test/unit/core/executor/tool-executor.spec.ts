import {
  type ConsentCheck,
  type ConsentCheckRequest,
  type ExecutorStateStore,
  parksOn,
  type ToolCallRequest,
  type ToolOutcome,
} from '../../../../src/core/executor/contracts';
import { ruleIndexFor } from '../../../../src/core/rules/rule-index';
import type { ToolRule } from '../../../../src/core/rules/tool-rule';
import type { ToolSafety } from '../../../../src/core/tools/tool-definition';
import { aSetup, aTool, code, Harness } from './executor-harness';

describe('allowedTools: what the next model call may be offered', () => {
  type Row = {
    scenario: string;
    rules: ToolRule[];
    script: string[];
    tools: string;
    force?: string;
  };
  const rows: Row[] = [
    { scenario: 'no rules: every tool, nothing forced', rules: [], script: [], tools: 'a b c d e' },
    {
      scenario: 'run_first narrows to the start tool and forces it',
      rules: [{ type: 'run_first', tool_name: 'b' }],
      script: [],
      tools: 'b',
      force: 'b',
    },
    {
      scenario: 'run_first with two start tools: both, not forced',
      rules: [
        { type: 'run_first', tool_name: 'a' },
        { type: 'run_first', tool_name: 'b' },
      ],
      script: [],
      tools: 'a b',
    },
    {
      scenario: 'run_first satisfied: everything again',
      rules: [{ type: 'run_first', tool_name: 'b' }],
      script: ['b'],
      tools: 'a b c d e',
    },
    {
      scenario: 'constrain_child after the parent',
      rules: [{ type: 'constrain_child_tools', tool_name: 'a', children: ['c', 'd'] }],
      script: ['a'],
      tools: 'c d',
    },
    {
      scenario: 'constrain_child with one child forces it',
      rules: [{ type: 'constrain_child_tools', tool_name: 'a', children: ['c'] }],
      script: ['a'],
      tools: 'c',
      force: 'c',
    },
    {
      scenario: 'parent_last hides children until the parent ran',
      rules: [{ type: 'parent_last_tool', tool_name: 'a', children: ['b', 'c'] }],
      script: [],
      tools: 'a d e',
    },
    {
      scenario: 'parent_last: right after the parent, only its children',
      rules: [{ type: 'parent_last_tool', tool_name: 'a', children: ['b', 'c'] }],
      script: ['a'],
      tools: 'b c',
    },
    {
      scenario: 'conditional: the mapped child only',
      rules: [{ type: 'conditional', tool_name: 'a', child_output_mapping: { 'a ok': 'e' } }],
      script: ['a'],
      tools: 'e',
      force: 'e',
    },
    {
      scenario: 'conditional, require_output_mapping, no match: nothing',
      rules: [
        {
          type: 'conditional',
          tool_name: 'a',
          child_output_mapping: { x: 'e' },
          require_output_mapping: true,
        },
      ],
      script: ['a'],
      tools: '',
    },
    {
      scenario: 'max calls reached drops the tool',
      rules: [{ type: 'max_count_per_step', tool_name: 'a', max_count_limit: 1 }],
      script: ['a'],
      tools: 'b c d e',
    },
    {
      scenario: 'exclusive group claimed drops the others',
      rules: [{ type: 'exclusive_group', tools: ['a', 'b', 'c'] }],
      script: ['b'],
      tools: 'b d e',
    },
    {
      scenario: 'cooldown drops the tool until it expires',
      rules: [{ type: 'cooldown', tool_name: 'a', seconds: 60 }],
      script: ['a', '+59s'],
      tools: 'b c d e',
    },
    {
      scenario: 'cooldown expired: back',
      rules: [{ type: 'cooldown', tool_name: 'a', seconds: 60 }],
      script: ['a', '+60s'],
      tools: 'a b c d e',
    },
    {
      scenario: 'requires_preceding hides the tool until its tools ran',
      rules: [{ type: 'requires_preceding_tools', tool_name: 'e', tools: ['a'] }],
      script: [],
      tools: 'a b c d',
    },
    {
      scenario: 'requires_following hides the tool after its followers',
      rules: [{ type: 'requires_following_tools', tool_name: 'a', tools: ['b'] }],
      script: ['b'],
      tools: 'b c d e',
    },
    {
      scenario: 'rules narrowing to one of many force it',
      rules: [{ type: 'max_count_per_step', tool_name: '*', max_count_limit: 1 }],
      script: ['a', 'b', 'c', 'd'],
      tools: 'e',
      force: 'e',
    },
  ];
  test.each(rows)('$scenario', async ({ rules, script, tools, force }) => {
    const h = new Harness(aSetup(rules));
    await h.run(script);
    const allowed = await h.executor.allowedTools(h.setup, h.pass);
    expect(allowed.tools.join(' ')).toBe(tools);
    expect(allowed.force).toBe(force);
  });

  it('does not force an agent that simply has one tool', async () => {
    const h = new Harness(aSetup([], [aTool('only')]));
    expect(await h.executor.allowedTools(h.setup, h.pass)).toEqual({ tools: ['only'] });
  });
});

describe('model-facing texts', () => {
  test.each<[string, ToolRule[], string[], string]>([
    [
      'requires_preceding names the rule and what is allowed',
      [
        { type: 'requires_preceding_tools', tool_name: 'deploy', tools: ['run_tests'] },
        { type: 'parent_last_tool', tool_name: 'x', children: ['a', 'b', 'c', 'd', 'e'] },
      ],
      ['deploy'],
      '[ToolRuleViolation] deploy requires run_tests earlier in this pass; allowed now: run_tests, status, x',
    ],
    [
      'unknown tool lists the available ones',
      [],
      ['nope'],
      '[ToolNotFound] no tool named nope; available: a, b, c, d, e, run_tests, status, deploy, x',
    ],
    [
      'max calls',
      [{ type: 'max_count_per_step', tool_name: 'a', max_count_limit: 1 }],
      ['a', 'a'],
      '[ToolRuleViolation] a reached its limit of 1 call in this batch; allowed now: b, c, d, e, run_tests, status, deploy, x',
    ],
    [
      'cooldown says when',
      [{ type: 'cooldown', tool_name: 'a', seconds: 60 }],
      ['a', '+20s', 'a'],
      '[ToolRuleViolation] a is cooling down (60s between calls); it may run again in 40s; allowed now: b, c, d, e, run_tests, status, deploy, x',
    ],
  ])('%s', async (_s, rules, script, text) => {
    const tools = ['a', 'b', 'c', 'd', 'e', 'run_tests', 'status', 'deploy', 'x'].map((n) =>
      aTool(n),
    );
    const h = new Harness(aSetup(rules, tools));
    const steps = script.slice(0, -1);
    await h.run(steps);
    const last = script[script.length - 1];
    const out = await h.call(last);
    expect(out.returnValue).toBe(text);
    expect(out.kind).toBe('refused');
  });

  it('the classic example reads as in the issue', async () => {
    const tools = ['run_tests', 'status', 'deploy'].map((n) => aTool(n));
    const h = new Harness(
      aSetup(
        [{ type: 'requires_preceding_tools', tool_name: 'deploy', tools: ['run_tests'] }],
        tools,
      ),
    );
    const out = await h.call('deploy');
    expect(out.returnValue).toBe(
      '[ToolRuleViolation] deploy requires run_tests earlier in this pass; allowed now: run_tests, status',
    );
    expect(out.error).toEqual({
      type: 'RuleViolation',
      message: out.returnValue,
      rule: h.setup.rules[0],
    });
  });
});

describe('arguments', () => {
  const schema = {
    type: 'object',
    properties: { env: { type: 'string' } },
    required: ['env'],
    additionalProperties: false,
  };

  it('validates against the JSON Schema after stripping request_heartbeat', async () => {
    const h = new Harness(aSetup([], [aTool('deploy', 'read_only', schema)]));
    const ok = await h.call('deploy', { env: 'prod', request_heartbeat: true });
    expect([code(ok), ok.requestHeartbeat, ok.arguments]).toEqual(['ok', true, { env: 'prod' }]);
    expect(h.invoker.calls[0].args).toEqual({ env: 'prod' });
    const bad = await h.call('deploy', { env: 3 });
    expect(code(bad)).toBe('InvalidArguments');
    expect(bad.returnValue).toBe(
      '[ToolInvalidArguments] invalid arguments for deploy: /env must be string',
    );
    const notJson = await h.call('deploy', '{"env":');
    expect(notJson.returnValue).toBe(
      '[ToolInvalidArguments] the arguments for deploy are not valid JSON',
    );
    expect(h.invoker.calls).toHaveLength(1);
  });

  it.each<[unknown, boolean]>([
    [true, true],
    ['true', true],
    [' True ', true],
    [false, false],
    ['false', false],
    ['yes', false],
    [1, false],
    [null, false],
  ])('request_heartbeat %j asks for a heartbeat: %s (always stripped)', async (flag, asked) => {
    const h = new Harness(aSetup());
    const out = await h.call('a', { x: 1, request_heartbeat: flag });
    expect([out.requestHeartbeat, out.arguments]).toEqual([asked, { x: 1 }]);
  });

  it("child_arg_nodes (Letta's) override the model's args only right after the parent", async () => {
    const h = new Harness(
      aSetup([
        {
          type: 'constrain_child_tools',
          tool_name: 'a',
          children: ['b', 'c'],
          child_arg_nodes: [{ name: 'b', args: { mode: 'pinned' } }],
        },
      ]),
    );
    await h.call('a');
    expect((await h.call('b', { mode: 'model', extra: 1 })).arguments).toEqual({
      mode: 'pinned',
      extra: 1,
    });
    expect((await h.call('b', { mode: 'model' })).arguments).toEqual({ mode: 'model' });
  });

  it('run_first args are prefilled and override the model', async () => {
    const h = new Harness(aSetup([{ type: 'run_first', tool_name: 'a', args: { mode: 'init' } }]));
    const out = await h.call('a', { mode: 'other', extra: 1 });
    expect(out.arguments).toEqual({ mode: 'init', extra: 1 });
  });

  it('a refused or failed call does not report a heartbeat request; continue/exit flags come from rules', async () => {
    const h = new Harness(
      aSetup([
        { type: 'continue_loop', tool_name: 'a' },
        { type: 'exit_loop', tool_name: 'b' },
        { type: 'max_count_per_step', tool_name: 'c', max_count_limit: 0 },
      ]),
    );
    const a = await h.call('a', { request_heartbeat: true });
    expect([a.requestHeartbeat, a.continueLoop, a.exitLoop]).toEqual([true, true, false]);
    expect(h.executor.requiresHeartbeat(h.setup, 'a')).toBe(false);
    expect(h.executor.requiresHeartbeat(h.setup, 'b')).toBe(true);
    const c = await h.call('c', { request_heartbeat: true });
    expect(c.requestHeartbeat).toBe(false);
    expect(h.executor.shouldExitLoop(h.pass)).toBe(false);
    const b = await h.call('b');
    expect(b.exitLoop).toBe(true);
    expect(h.executor.shouldExitLoop(h.pass)).toBe(true);
  });
});

describe('consent', () => {
  const rules: ToolRule[] = [{ type: 'requires_consent', tool_name: 'a', scope: 'prod' }];

  it('granted: runs and reports the grant', async () => {
    const h = new Harness(aSetup(rules));
    const out = await h.call('a', { x: 1 });
    expect([code(out), out.grantId]).toEqual(['ok', 'grant-1']);
    expect(h.consent.requests[0]).toMatchObject({
      toolName: 'a',
      scope: 'prod',
      arguments: { x: 1 },
      timeoutMs: 300_000,
      batchId: 'batch-1',
    });
  });

  it('approved: runs', async () => {
    const h = new Harness(aSetup([{ type: 'requires_approval', tool_name: 'a' }]));
    h.consent.answer = () => ({ kind: 'approved', requestId: 'req-1' });
    expect(code(await h.call('a'))).toBe('ok');
    expect(h.consent.requests[0].scope).toBe('a');
  });

  it('denied: refused with the reason, never run', async () => {
    const h = new Harness(aSetup(rules));
    h.consent.answer = () => ({ kind: 'denied', reason: 'not on Fridays' });
    const out = await h.call('a');
    expect(out.returnValue).toMatch(
      /^\[ToolPermissionDenied\] a was denied: not on Fridays; allowed now: /,
    );
    expect(h.invoker.calls).toHaveLength(0);
  });

  it('a throwing broker fails closed', async () => {
    const h = new Harness(aSetup(rules));
    h.consent.answer = () => {
      throw new Error('broker down');
    };
    expect(code(await h.call('a'))).toBe('PermissionDenied');
    expect(h.invoker.calls).toHaveLength(0);
  });

  it('pending: consent_required, nothing executed or recorded; the same call runs after approval', async () => {
    const h = new Harness(
      aSetup([
        ...rules,
        { type: 'max_count_per_step', tool_name: 'a', max_count_limit: 1 },
        { type: 'cooldown', tool_name: 'a', seconds: 60 },
      ]),
    );
    h.consent.answer = () => ({ kind: 'pending', requestId: 'req-9' });
    const parked = await h.call('a', {}, 'call-x');
    expect([parked.kind, parked.consentRequestId]).toEqual(['consent_required', 'req-9']);
    expect(h.invoker.calls).toHaveLength(0);
    expect(h.pass.history).toHaveLength(0);
    expect(h.store.claims.size).toBe(0);
    h.consent.answer = () => ({ kind: 'approved', requestId: 'req-9' });
    h.restart(); // parking may outlive the process
    h.heartbeat();
    expect(code(await h.call('a', {}, 'call-x'))).toBe('ok');
  });
});

describe('calls of one turn that wait for consent count toward batch rules, cooldowns and dedupe', () => {
  /** `a` calls a with `{n: <position>}` (every call its own arguments); `a {"x":1}` with those arguments. */
  const turn = (h: Harness, calls: string[]) =>
    h.executor.executeBatch(
      h.setup,
      h.pass,
      calls.map((c, i) => {
        const [name, args] = c.split(/ (.*)/);
        return {
          toolCallId: `call-${i}`,
          name,
          arguments: args ? (JSON.parse(args) as Record<string, unknown>) : { n: i },
        };
      }),
      h.meta(),
    );

  it.each<[string, ToolRule[], string[], string, RegExp, ToolSafety?]>([
    [
      'max count: no request for a call past the limit',
      [{ type: 'max_count_per_step', tool_name: 'a', max_count_limit: 2 }],
      ['a', 'a', 'a'],
      'pending pending RuleViolation',
      /\(counting 2 waiting for consent\)/,
    ],
    [
      'exclusive group: a waiting tool holds the group',
      [{ type: 'exclusive_group', tools: ['a', 'b'] }],
      ['a', 'b', 'a'],
      'pending RuleViolation pending',
      /exclusive with a, which waits for consent/,
    ],
    [
      'cooldown: a second call would be cooling down once the first runs',
      [{ type: 'cooldown', tool_name: 'a', seconds: 60 }],
      ['a', 'b', 'a'],
      'pending pending RuleViolation',
      /^\[ToolRuleViolation\] a is cooling down \(60s between calls\): its call call-0 in this turn waits for consent/,
    ],
    [
      'cooldown of a side-effecting tool (each call runs alone)',
      [{ type: 'cooldown', tool_name: 'a', seconds: 60 }],
      ['a', 'a'],
      'pending RuleViolation',
      /a is cooling down \(60s between calls\): its call call-0/,
      'side_effecting',
    ],
    [
      'dedupe (reject): an identical call would be a duplicate once the first runs',
      [{ type: 'dedupe', tool_name: 'a', window_seconds: 60, mode: 'reject' }],
      ['a {"x":1}', 'a {"x":1}', 'a {"x":2}'],
      'pending Deduplicated pending',
      /^\[ToolDeduplicated\] a was already called with these arguments in this turn \(call call-0, waiting for consent; dedupe window 60s\)/,
    ],
    [
      'dedupe (return_cached): there is no result to answer with yet',
      [{ type: 'dedupe', tool_name: 'a', window_seconds: 60, mode: 'return_cached' }],
      ['a {"x":1}', 'a {"x":1}'],
      'pending Deduplicated',
      /call call-0, waiting for consent/,
    ],
    [
      "dedupe by default (a side-effecting tool): request_heartbeat is not part of a call's identity",
      [],
      ['a {"x":1}', 'a {"x":1,"request_heartbeat":true}'],
      'pending Deduplicated',
      /call call-0, waiting for consent; dedupe window 300s/,
      'side_effecting',
    ],
    [
      'dedupe off: identical calls are each asked about',
      [{ type: 'dedupe', tool_name: 'a', window_seconds: 60, mode: 'off' }],
      ['a {"x":1}', 'a {"x":1}'],
      'pending pending',
      /^$/,
    ],
  ])('%s', async (_s, extra, calls, codes, text, safety = 'read_only') => {
    const h = new Harness(
      aSetup(
        [
          { type: 'requires_consent', tool_name: 'a' },
          { type: 'requires_consent', tool_name: 'b' },
          ...extra,
        ],
        ['a', 'b', 'c'].map((n) => aTool(n, safety)),
      ),
    );
    h.consent.answer = (req) => ({ kind: 'pending', requestId: `req-${req.toolCallId}` });
    const out = await turn(h, calls);
    expect(out.map(code).join(' ')).toBe(codes);
    // only the calls that may run once approved asked anyone
    expect(h.consent.requests.map((r) => r.toolCallId)).toEqual(
      out.filter((o) => o.kind === 'consent_required').map((o) => o.toolCallId),
    );
    expect(out.find((o) => o.kind === 'refused')?.returnValue ?? '').toMatch(text);
    expect(h.invoker.calls).toHaveLength(0);
  });

  it.each<[string, ToolRule]>([
    ['cooldown', { type: 'cooldown', tool_name: 'a', seconds: 60 }],
    ['dedupe', { type: 'dedupe', tool_name: 'a', window_seconds: 60, mode: 'reject' }],
  ])(
    '%s: the waiting call denied, the refused one never runs (fails closed); approved, it runs alone',
    async (_s, rule) => {
      for (const approve of [false, true]) {
        const h = new Harness(aSetup([{ type: 'requires_consent', tool_name: 'a' }, rule]));
        h.consent.answer = (req) => ({ kind: 'pending', requestId: `req-${req.toolCallId}` });
        expect((await turn(h, ['a {}', 'a {}'])).map(code)).toEqual([
          'pending',
          rule.type === 'cooldown' ? 'RuleViolation' : 'Deduplicated',
        ]);
        // the batch goes on with the parked call only: the refused one was answered for good
        h.consent.answer = (req) =>
          approve
            ? { kind: 'approved', requestId: `req-${req.toolCallId}` }
            : { kind: 'denied', reason: 'no', requestId: `req-${req.toolCallId}` };
        expect((await turn(h, ['a {}'])).map(code)).toEqual([approve ? 'ok' : 'PermissionDenied']);
        expect(h.invoker.calls).toHaveLength(approve ? 1 : 0);
        expect(h.consent.requests.map((r) => r.toolCallId)).toEqual(['call-0', 'call-0']);
      }
    },
  );

  it('a standing grant covering a later call of a cooling tool: the earlier waiting call goes first', async () => {
    // the grant's constraint covers small amounts: the big payment waits for a person, the small one is granted
    const h = new Harness(
      aSetup([
        { type: 'requires_consent', tool_name: 'a' },
        { type: 'cooldown', tool_name: 'a', seconds: 60 },
      ]),
    );
    h.consent.answer = (req) =>
      Number(req.arguments.amount) > 100
        ? { kind: 'pending', requestId: `req-${req.toolCallId}` }
        : { kind: 'granted', grantId: 'grant-small' };
    const out = await turn(h, ['a {"amount":500}', 'a {"amount":5}']);
    expect(out.map(code)).toEqual(['pending', 'RuleViolation']);
    expect(out[1].returnValue).toMatch(/its call call-0 in this turn waits for consent/);
    expect(h.invoker.calls).toHaveLength(0);
    // the person's approval is not wasted: the call they approved runs
    h.consent.answer = (req) => ({ kind: 'approved', requestId: `req-${req.toolCallId}` });
    expect((await turn(h, ['a {"amount":500}'])).map(code)).toEqual(['ok']);
  });

  it('once approved, the waiting calls run: they no longer count against each other', async () => {
    const h = new Harness(
      aSetup([
        { type: 'requires_consent', tool_name: 'a' },
        { type: 'max_count_per_step', tool_name: 'a', max_count_limit: 2 },
      ]),
    );
    h.consent.answer = (req) => ({ kind: 'pending', requestId: `req-${req.toolCallId}` });
    expect((await turn(h, ['a', 'a'])).map(code)).toEqual(['pending', 'pending']);
    h.consent.answer = (req) => ({ kind: 'approved', requestId: `req-${req.toolCallId}` });
    expect((await turn(h, ['a', 'a'])).map(code)).toEqual(['ok', 'ok']);
    expect((await turn(h, ['a'])).map(code)).toEqual(['RuleViolation']);
  });
});

/** `a` calls a with `{}`, `a {"x":1}` with those arguments; ids `call-<position>`. */
const calls = (specs: string[]): ToolCallRequest[] =>
  specs.map((c, i) => {
    const [name, args] = c.split(/ (.*)/);
    return {
      toolCallId: `call-${i}`,
      name,
      arguments: args ? (JSON.parse(args) as Record<string, unknown>) : {},
    };
  });
const pending = (req: ConsentCheckRequest): ConsentCheck => ({
  kind: 'pending',
  requestId: `req-${req.toolCallId}`,
});
const approved = (req: ConsentCheckRequest): ConsentCheck => ({
  kind: 'approved',
  requestId: `req-${req.toolCallId}`,
});
const child = (parent: string, children: string[]): ToolRule => ({
  type: 'constrain_child_tools',
  tool_name: parent,
  children,
});

const turn = (h: Harness, sent: ToolCallRequest[]) =>
  h.executor.executeBatch(h.setup, h.pass, sent, h.meta());
/** The parked turn goes on: the client's results and the approved calls, in the turn's order. */
const goOn = (h: Harness, parked: ToolOutcome[], sent: ToolCallRequest[]) =>
  turn(
    h,
    parked.map((o) => {
      const call = sent.find((c) => c.toolCallId === o.toolCallId)!;
      return o.kind === 'client_required'
        ? {
            ...call,
            clientResult: {
              status: 'success' as const,
              value: `${o.toolName} ok`,
              startedAt: o.startedAt!,
              heartbeat: o.requestHeartbeat,
            },
          }
        : call;
    }),
  );
/** The person approves the calls asked about so far; a call asked about for the first time waits. */
const approvedIfAsked = (h: Harness) => {
  const asked = new Set(h.consent.requests.map((r) => r.toolCallId));
  return (req: ConsentCheckRequest) => (asked.has(req.toolCallId) ? approved : pending)(req);
};
/** A decision's continuation: the turn's waiting and held calls, in its order. */
const goOnAfterDecisions = (h: Harness, out: ToolOutcome[], sent: ToolCallRequest[]) => {
  h.consent.answer = approvedIfAsked(h);
  return goOn(h, out.filter(parksOn), sent);
};
/**
 * A table row: the turn gets the first round of `rounds` (` | ` between rounds), only the calls that can
 * run once approved asking anyone; then, round after round, every request is approved and the client's
 * calls answered, and the waiting and held calls go on, in the turn's order (a held call judged in its
 * place: it may then be refused, run, or be asked about). The first refusal's text matches `text`; what
 * ran, ran once, in the turn's order.
 */
async function turnThenGoOn(h: Harness, specs: string[], rounds: string, text: RegExp) {
  h.consent.answer = pending;
  const sent = calls(specs);
  let out = await turn(h, sent);
  const got = [out.map(code).join(' ')];
  expect(h.consent.requests.map((r) => r.toolCallId)).toEqual(
    out.filter((o) => o.kind === 'consent_required').map((o) => o.toolCallId),
  );
  // nothing held ran before the decisions
  expect(h.invoker.calls.map((c) => c.name)).toEqual(
    out.filter((o) => o.kind === 'executed').map((o) => o.toolName),
  );
  const all = [...out];
  while (out.some(parksOn) && got.length < 5) {
    out = await goOnAfterDecisions(h, out, sent);
    got.push(out.map(code).join(' '));
    all.push(...out);
  }
  expect(got.join(' | ')).toBe(rounds);
  expect(all.find((o) => o.kind === 'refused')?.returnValue ?? '').toMatch(text);
  // the pass history: what ran (or the client answered), once each; with ordering rules in the turn's order
  const ran = all.filter((o) => o.kind === 'executed').map((o) => o.toolCallId);
  const inOrder = sent.map((c) => c.toolCallId).filter((id) => ran.includes(id));
  const history = h.pass.history.map((e) => e.toolCallId);
  expect(ruleIndexFor(h.setup).hasOrderingRules ? history : [...history].sort()).toEqual(inOrder);
}

describe('calls of one turn that wait for consent: the ordering rules see them as run, in order; a call they decide is held', () => {
  /** a, b and c need consent; d and e do not. */
  const anAgent = (rules: ToolRule[]) =>
    new Harness(
      aSetup([
        { type: 'requires_consent', tool_name: 'a' },
        { type: 'requires_consent', tool_name: 'b' },
        { type: 'requires_consent', tool_name: 'c' },
        ...rules,
      ]),
    );

  it.each<[string, ToolRule[], string[], string, RegExp]>([
    [
      'constrain_child_tools: right after a only c: b is held (and c after it), then refused after a; c is asked about then',
      [child('a', ['c'])],
      ['a', 'b', 'c'],
      'pending held held | ok RuleViolation pending | ok',
      /^\[ToolRuleViolation\] right after a only c may run, not b; allowed now: c$/,
    ],
    [
      'parent_last_tool, the parent side: right after a only b',
      [{ type: 'parent_last_tool', tool_name: 'a', children: ['b'] }],
      ['a', 'c', 'b'],
      'pending held held | ok RuleViolation pending | ok',
      /right after a only b may run, not c; allowed now: b$/,
    ],
    [
      'parent_last_tool, the child side: another waiting call comes between the parent and b',
      [{ type: 'parent_last_tool', tool_name: 'a', children: ['b', 'c'] }],
      ['a', 'c', 'b'],
      'pending pending held | ok ok RuleViolation',
      /^\[ToolRuleViolation\] b may run only right after a; allowed now/,
    ],
    [
      "conditional: the next tool depends on a's output: b is held, and judged on the output once a ran",
      [
        {
          type: 'conditional',
          tool_name: 'a',
          child_output_mapping: { yes: 'b', no: 'c' },
        },
      ],
      ['a', 'b'],
      'pending held | ok pending | ok',
      /^$/,
    ],
    [
      'conditional: every output of a selects b',
      [
        {
          type: 'conditional',
          tool_name: 'a',
          child_output_mapping: { yes: 'b' },
          default_child: 'b',
        },
      ],
      ['a', 'b'],
      'pending pending | ok ok',
      /^$/,
    ],
    [
      'requires_preceding_tools: whether a succeeds is not known while it waits: b is held, asked about once a succeeded',
      [{ type: 'requires_preceding_tools', tool_name: 'b', tools: ['a'] }],
      ['a', 'b'],
      'pending held | ok pending | ok',
      /^$/,
    ],
    [
      'requires_preceding_tools: a prerequisite that does not wait is missing: refused at once (unchanged)',
      [{ type: 'requires_preceding_tools', tool_name: 'b', tools: ['a', 'd'] }],
      ['a', 'b'],
      'pending RuleViolation | ok',
      /b requires a, d earlier in this pass; whether a succeeds is not known yet/,
    ],
    [
      'requires_following_tools: b must run before a, which comes first once approved: held, then refused',
      [{ type: 'requires_following_tools', tool_name: 'b', tools: ['a'] }],
      ['a', 'b'],
      'pending held | ok RuleViolation',
      /b must run before a, which already ran in this pass/,
    ],
    [
      'run_first: a start tool that waits meets the rule for the calls after it',
      [{ type: 'run_first', tool_name: 'a' }],
      ['a', 'b'],
      'pending pending | ok ok',
      /^$/,
    ],
    [
      'a child that needs no consent does not run ahead of its waiting parent: held, it runs right after it',
      [child('a', ['d'])],
      ['a', 'd'],
      'pending held | ok ok',
      /^$/,
    ],
    [
      'with ordering rules, no call runs ahead of a waiting one; calls before it run',
      [{ type: 'run_first', tool_name: 'e' }],
      ['e', 'a', 'd'],
      'ok pending held | ok ok',
      /^$/,
    ],
    [
      'without ordering rules, a call that needs no consent runs at once (unchanged)',
      [],
      ['a', 'd'],
      'pending ok | ok',
      /^$/,
    ],
  ])('%s', (_s, rules, specs, codes, text) => turnThenGoOn(anAgent(rules), specs, codes, text));

  it('approved: the parent runs, then the held calls are judged after it in order; nothing runs twice', async () => {
    const h = anAgent([child('a', ['c'])]);
    h.consent.answer = pending;
    const sent = calls(['a', 'b', 'c']);
    expect((await turn(h, sent)).map(code)).toEqual(['pending', 'held', 'held']);
    // the next model call is offered what it was before the turn: a has not run yet
    expect(await h.executor.allowedTools(h.setup, h.pass)).toEqual({
      tools: ['a', 'b', 'c', 'd', 'e'],
    });
    h.consent.answer = approvedIfAsked(h);
    expect((await turn(h, sent)).map(code)).toEqual(['ok', 'RuleViolation', 'pending']);
    h.consent.answer = approvedIfAsked(h);
    const resumed = [sent[2]];
    expect((await turn(h, resumed)).map(code)).toEqual(['ok']);
    expect(h.invoker.calls.map((c) => c.name)).toEqual(['a', 'c']);
    // the batch goes on after c, as it would have without consent
    expect(await h.executor.allowedTools(h.setup, h.pass)).toEqual({
      tools: ['a', 'b', 'c', 'd', 'e'],
    });
    // the continuation replayed (a restart, a second decision): nothing runs twice
    expect((await turn(h, [sent[0], sent[2]])).map(code)).toEqual([
      'AlreadyExecuted',
      'AlreadyExecuted',
    ]);
    expect(h.invoker.calls).toHaveLength(2);
    // c was asked about once a had run, not beside it
    expect(h.consent.requests.map((r) => r.toolCallId)).toEqual([
      'call-0',
      'call-0',
      'call-2',
      'call-2',
      'call-0',
      'call-2',
    ]);
  });

  it.each<[string, 'approve' | 'deny', string]>([
    ['approved: d is judged right after a, so it is refused', 'approve', 'ok RuleViolation'],
    ['denied: d is judged as if a had not run, so it runs', 'deny', 'PermissionDenied ok'],
  ])('a call held behind its waiting parent, %s', async (_s, decision, codes) => {
    const h = anAgent([child('a', ['c'])]);
    h.consent.answer = pending;
    const sent = calls(['a', 'd']);
    expect((await turn(h, sent)).map(code)).toEqual(['pending', 'held']);
    expect(h.invoker.calls).toHaveLength(0);
    h.consent.answer = (req) =>
      decision === 'approve'
        ? approved(req)
        : { kind: 'denied', reason: 'no', requestId: `req-${req.toolCallId}` };
    const out = await turn(h, sent);
    expect(out.map(code).join(' ')).toBe(codes);
    if (decision === 'approve')
      expect(out[1].returnValue).toBe(
        '[ToolRuleViolation] right after a only c may run, not d; allowed now: c',
      );
    expect(h.invoker.calls.map((c) => c.name)).toEqual(decision === 'approve' ? ['a'] : ['d']);
  });

  it("conditional: a held call is judged on the waiting call's output once it ran", async () => {
    const h = anAgent([
      { type: 'conditional', tool_name: 'a', child_output_mapping: { yes: 'd', no: 'e' } },
    ]);
    h.invoker.outputs.set('a', 'no');
    h.consent.answer = pending;
    const sent = calls(['a', 'd', 'e']);
    expect((await turn(h, sent)).map(code)).toEqual(['pending', 'held', 'held']);
    h.consent.answer = approved;
    const out = await turn(h, sent);
    expect(out.map(code)).toEqual(['ok', 'RuleViolation', 'ok']);
    expect(out[1].returnValue).toMatch(/the output of a selects e as the next tool, not d/);
    expect(h.invoker.calls.map((c) => c.name)).toEqual(['a', 'e']);
  });

  it('after the approved parent runs, the next model call is offered only its children', async () => {
    const h = anAgent([child('a', ['c', 'd'])]);
    h.consent.answer = pending;
    const sent = calls(['a', 'c']);
    expect((await turn(h, sent)).map(code)).toEqual(['pending', 'pending']);
    h.consent.answer = approved;
    expect((await turn(h, [sent[0]])).map(code)).toEqual(['ok']);
    expect(await h.executor.allowedTools(h.setup, h.pass)).toEqual({ tools: ['c', 'd'] });
  });

  it.each<[string, ToolRule, string]>([
    [
      'parent_last_tool: b may run only right after a, which did not run (fails closed)',
      { type: 'parent_last_tool', tool_name: 'a', children: ['b'] },
      'RuleViolation',
    ],
    [
      'constrain_child_tools: without a, nothing constrains b: the approved call runs',
      child('a', ['b']),
      'ok',
    ],
  ])('the parent denied, the child approved: %s', async (_s, rule, childCode) => {
    const h = anAgent([rule]);
    h.consent.answer = pending;
    const sent = calls(['a', 'b']);
    expect((await turn(h, sent)).map(code)).toEqual(['pending', 'pending']);
    h.consent.answer = (req) =>
      req.toolName === 'a'
        ? { kind: 'denied', reason: 'no', requestId: `req-${req.toolCallId}` }
        : approved(req);
    expect((await turn(h, sent)).map(code)).toEqual(['PermissionDenied', childCode]);
    expect(h.invoker.calls.map((c) => c.name)).toEqual(childCode === 'ok' ? ['b'] : []);
  });

  it("a child's arguments from child_arg_nodes are shown to the person as it will run", async () => {
    const h = anAgent([
      {
        type: 'constrain_child_tools',
        tool_name: 'a',
        children: ['c'],
        child_arg_nodes: [{ name: 'c', args: { mode: 'safe' } }],
      },
    ]);
    h.consent.answer = pending;
    const sent = calls(['a', 'c {"mode":"fast","x":1}']);
    expect((await turn(h, sent)).map(code)).toEqual(['pending', 'pending']);
    expect(h.consent.requests[1].arguments).toEqual({ mode: 'safe', x: 1 });
    h.consent.answer = approved;
    expect((await turn(h, sent)).map(code)).toEqual(['ok', 'ok']);
    expect(h.invoker.calls[1].args).toEqual({ mode: 'safe', x: 1 });
  });

  it('a standing grant covering a later child: it does not run ahead of the waiting parent', async () => {
    const h = anAgent([child('a', ['c'])]);
    h.consent.answer = (req) =>
      req.toolName === 'c' ? { kind: 'granted', grantId: 'grant-c' } : pending(req);
    const sent = calls(['a', 'c']);
    const out = await turn(h, sent);
    expect(out.map(code)).toEqual(['pending', 'held']);
    expect(out[1].returnValue).toMatch(
      /c waits: it comes after a \(call call-0, waiting for consent\)/,
    );
    expect(h.invoker.calls).toHaveLength(0);
    h.consent.answer = (req) =>
      req.toolName === 'c' ? { kind: 'granted', grantId: 'grant-c' } : approved(req);
    expect((await turn(h, sent)).map(code)).toEqual(['ok', 'ok']);
    expect(h.invoker.calls.map((c) => c.name)).toEqual(['a', 'c']);
  });

  it('a call the dedupe cache would answer is not answered ahead of a waiting call', async () => {
    const h = anAgent([
      child('e', ['a', 'd']),
      { type: 'dedupe', tool_name: 'd', window_seconds: 60, mode: 'return_cached' },
    ]);
    expect(await h.run(['d {"x":1}'])).toBe('ok');
    h.consent.answer = pending;
    const sent = calls(['a', 'd {"x":1}']);
    const out = await turn(h, sent);
    expect(out.map(code)).toEqual(['pending', 'held']);
    expect(h.pass.history.map((e) => e.toolName)).toEqual(['d']);
    // once a ran, the cache answers in d's place
    h.consent.answer = approved;
    expect((await turn(h, sent)).map(code)).toEqual(['ok', 'cached']);
    expect(h.pass.history.map((e) => e.toolName)).toEqual(['d', 'a', 'd']);
  });
});

describe("client calls of one turn wait for the client's result: the rules see them as run, in order; a call they decide is held", () => {
  /** k and m run on the client; a, b and c need consent; d and e do not. */
  const anAgent = (rules: ToolRule[]) =>
    new Harness(
      aSetup(
        [
          { type: 'requires_consent', tool_name: 'a' },
          { type: 'requires_consent', tool_name: 'b' },
          { type: 'requires_consent', tool_name: 'c' },
          ...rules,
        ],
        [
          ...['a', 'b', 'c', 'd', 'e'].map((n) => aTool(n)),
          ...['k', 'm'].map((n) => ({ ...aTool(n, 'side_effecting'), kind: 'client' as const })),
        ],
      ),
    );

  it.each<[string, ToolRule[], string[], string, RegExp]>([
    [
      'constrain_child_tools: right after a client call of k only c: d is held, then refused once k answered',
      [child('k', ['c'])],
      ['k', 'd'],
      'client held | ok RuleViolation',
      /^\[ToolRuleViolation\] right after k only c may run, not d; allowed now: c$/,
    ],
    [
      'constrain_child_tools: b held (c after it), b refused once k answered, c asked about then',
      [child('k', ['c'])],
      ['k', 'b', 'c'],
      'client held held | ok RuleViolation pending | ok',
      /right after k only c may run, not b; allowed now: c$/,
    ],
    [
      'a child that needs no consent does not run ahead of its client parent: held, it runs right after it',
      [child('k', ['d'])],
      ['k', 'd'],
      'client held | ok ok',
      /^$/,
    ],
    [
      'parent_last_tool: b comes right after the client call of its parent',
      [{ type: 'parent_last_tool', tool_name: 'k', children: ['b'] }],
      ['k', 'b'],
      'client pending | ok ok',
      /^$/,
    ],
    [
      "conditional: the next tool depends on k's output: b is held until the client answers",
      [{ type: 'conditional', tool_name: 'k', child_output_mapping: { yes: 'b', no: 'c' } }],
      ['k', 'b'],
      'client held | ok pending | ok',
      /^$/,
    ],
    [
      'requires_preceding_tools: whether k succeeds is not known yet: b is held',
      [{ type: 'requires_preceding_tools', tool_name: 'b', tools: ['k'] }],
      ['k', 'b'],
      'client held | ok pending | ok',
      /^$/,
    ],
    [
      'requires_following_tools: b must run before k, which comes first: held, then refused',
      [{ type: 'requires_following_tools', tool_name: 'b', tools: ['k'] }],
      ['k', 'b'],
      'client held | ok RuleViolation',
      /b must run before k, which already ran in this pass/,
    ],
    [
      'run_first: a client start tool meets the rule for the calls after it',
      [{ type: 'run_first', tool_name: 'k' }],
      ['k', 'b'],
      'client pending | ok ok',
      /^$/,
    ],
    [
      "the client's calls go to it together, in order: none runs ahead of another",
      [child('k', ['m'])],
      ['k', 'm'],
      'client client | ok ok',
      /^$/,
    ],
    [
      'a client call after a call waiting for consent does not run ahead of it: held, it goes to the client after it',
      [child('a', ['k'])],
      ['a', 'k'],
      'pending held | ok client | ok',
      /^$/,
    ],
    [
      'without ordering rules, a call after a client call runs at once (unchanged)',
      [],
      ['k', 'd'],
      'client ok | ok',
      /^$/,
    ],
    [
      'max count: a client call is counted once (when it is admitted), not again as waiting',
      [{ type: 'max_count_per_step', tool_name: 'k', max_count_limit: 2 }],
      ['k {"n":1}', 'k {"n":2}', 'k {"n":3}'],
      'client client RuleViolation | ok ok',
      /^\[ToolRuleViolation\] k reached its limit of 2 calls in this batch; allowed now/,
    ],
    [
      'dedupe: an identical call would be a duplicate once the client answers the first',
      [{ type: 'dedupe', tool_name: 'k', window_seconds: 60, mode: 'reject' }],
      ['k {"x":1}', 'k {"x":1}', 'k {"x":2}'],
      'client Deduplicated client | ok ok',
      /\(call call-0, waiting for the client's result; dedupe window 60s\)/,
    ],
  ])('%s', (_s, rules, specs, codes, text) => turnThenGoOn(anAgent(rules), specs, codes, text));

  it("on resume the client's result takes its place in the turn, before the approved call after it", async () => {
    const h = anAgent([{ type: 'parent_last_tool', tool_name: 'k', children: ['b'] }]);
    h.consent.answer = pending;
    const sent = calls(['k', 'b']);
    const out = await turn(h, sent);
    expect(out.map(code)).toEqual(['client', 'pending']);
    h.consent.answer = approved;
    expect((await goOn(h, out, sent)).map(code)).toEqual(['ok', 'ok']);
    expect(h.pass.history.map((e) => e.toolName)).toEqual(['k', 'b']);
    expect(h.invoker.calls.map((c) => c.name)).toEqual(['b']);
  });

  it('a client call that needs consent waits for the client once approved: with ordering rules, a call after it is held, and asked about once k was approved', async () => {
    const h = anAgent([
      { type: 'requires_consent', tool_name: 'k' },
      { type: 'parent_last_tool', tool_name: 'k', children: ['b'] },
    ]);
    h.consent.answer = pending;
    const sent = calls(['k', 'b']);
    const out = await turn(h, sent);
    expect(out.map(code)).toEqual(['pending', 'held']);
    expect(h.consent.requests.map((r) => r.toolCallId)).toEqual(['call-0']);
    // approved, k goes to the client, and b is asked about, to run after it
    h.consent.answer = approvedIfAsked(h);
    const after = await turn(h, sent);
    expect(after.map(code)).toEqual(['client', 'pending']);
    h.consent.answer = approvedIfAsked(h);
    expect((await goOn(h, after, sent)).map(code)).toEqual(['ok', 'ok']);
    expect(h.pass.history.map((e) => e.toolName)).toEqual(['k', 'b']);
  });

  it('two client calls that need consent: both are asked about, and go to the client together once approved', async () => {
    const h = anAgent([
      { type: 'requires_consent', tool_name: 'k' },
      { type: 'requires_consent', tool_name: 'm' },
      child('k', ['m']),
    ]);
    h.consent.answer = pending;
    const sent = calls(['k', 'm']);
    expect((await turn(h, sent)).map(code)).toEqual(['pending', 'pending']);
    h.consent.answer = approved;
    const both = await turn(h, sent);
    expect(both.map(code)).toEqual(['client', 'client']);
    expect((await goOn(h, both, sent)).map(code)).toEqual(['ok', 'ok']);
    expect(h.pass.history.map((e) => e.toolName)).toEqual(['k', 'm']);
  });

  it('the client refuses its call: the approved call after it is checked without it', async () => {
    const h = anAgent([{ type: 'parent_last_tool', tool_name: 'k', children: ['b'] }]);
    h.consent.answer = pending;
    const sent = calls(['k', 'b']);
    expect((await turn(h, sent)).map(code)).toEqual(['client', 'pending']);
    h.consent.answer = approved;
    // (the processor answers the refused client call itself: only b goes on)
    const [b] = await turn(h, [sent[1]]);
    expect(b.returnValue).toMatch(/b may run only right after k/);
    expect(h.invoker.calls).toHaveLength(0);
  });
});

describe('consent for a direct run (grantsOnly: no one can be asked)', () => {
  it('asks for grants only; none covering it is consent_required with no request, never run', async () => {
    const h = new Harness(aSetup([{ type: 'requires_consent', tool_name: 'a' }]));
    h.consent.answer = (req) =>
      req.grantsOnly ? { kind: 'required' } : { kind: 'pending', requestId: 'req-1' };
    const out = await h.executor.execute(
      h.setup,
      h.pass,
      { toolCallId: 'call-d', name: 'a', arguments: {} },
      { tenantId: 't', agentId: h.setup.agentId, runId: 'r', batchId: h.batchId, grantsOnly: true },
    );
    expect([out.kind, out.consentRequestId]).toEqual(['consent_required', undefined]);
    expect(h.consent.requests[0].grantsOnly).toBe(true);
    expect(h.invoker.calls).toHaveLength(0);
    expect(h.store.claims.size).toBe(0);
  });
});

describe('execution', () => {
  it('a tool_call_id executes at most once, even after a restart', async () => {
    const h = new Harness(aSetup());
    expect(code(await h.call('a', {}, 'same'))).toBe('ok');
    h.restart();
    h.heartbeat();
    const again = await h.call('b', {}, 'same');
    expect([code(again), again.returnValue]).toEqual([
      'AlreadyExecuted',
      '[ToolAlreadyExecuted] tool call same was already executed',
    ]);
    expect(h.invoker.calls.map((c) => c.name)).toEqual(['a']);
  });

  it('a call is its tool_call_id within its step: an id reused by a later step runs, the same call replayed does not', async () => {
    const h = new Harness(aSetup());
    const inStep = (stepId: string, name: string) =>
      h.executor.execute(
        h.setup,
        h.pass,
        { toolCallId: 'call_0', name, arguments: {}, stepId },
        h.meta(),
      );
    expect(code(await inStep('step-1', 'a'))).toBe('ok');
    // the provider gives the next response's call the same id: a new call
    expect(code(await inStep('step-2', 'b'))).toBe('ok');
    h.restart();
    h.heartbeat();
    // a replay of either stored call (recovery, a resumed turn) never runs twice
    expect(code(await inStep('step-1', 'a'))).toBe('AlreadyExecuted');
    expect(code(await inStep('step-2', 'b'))).toBe('AlreadyExecuted');
    expect(h.invoker.calls.map((c) => c.name)).toEqual(['a', 'b']);
    expect(await h.executor.wasStarted(h.setup.agentId, 'call_0', 'step-2')).toBe(true);
    expect(await h.executor.wasStarted(h.setup.agentId, 'call_0', 'step-3')).toBe(false);
  });

  it('a tool that does not finish in time is a Timeout, counted, not cached', async () => {
    const h = new Harness(
      aSetup(
        [{ type: 'max_count_per_step', tool_name: 'a', max_count_limit: 1 }],
        [aTool('a', 'side_effecting'), aTool('b')],
        { toolTimeoutMs: 5000 },
      ),
    );
    h.invoker.hanging.add('a');
    const pending = h.call('a');
    await Promise.resolve();
    await Promise.resolve();
    h.timers.fireAll();
    const out = await pending;
    expect([out.kind, out.returnValue]).toEqual([
      'timeout',
      '[ToolTimeout] a did not finish within 5s; its outcome is unknown (it may have taken effect)',
    ]);
    expect(code(await h.call('a', { other: 1 }))).toBe('RuleViolation');
  });

  it('a side-effecting call that timed out may have taken effect: an identical one is refused, never cached', async () => {
    const h = new Harness(
      aSetup(
        [{ type: 'dedupe', tool_name: 'pay', window_seconds: 300, mode: 'return_cached' }],
        [aTool('pay', 'side_effecting')],
        { toolTimeoutMs: 5000 },
      ),
    );
    h.invoker.hanging.add('pay');
    const pending = h.call('pay', { amount: 5 });
    await Promise.resolve();
    await Promise.resolve();
    h.timers.fireAll();
    expect((await pending).kind).toBe('timeout');
    h.invoker.hanging.delete('pay');
    const again = await h.call('pay', { amount: 5 });
    expect(code(again)).toBe('Deduplicated');
    expect(again.returnValue).toMatch(/did not finish: its outcome is unknown/);
    expect(h.invoker.calls).toHaveLength(1);
    expect(code(await h.call('pay', { amount: 6 }))).toBe('ok'); // other arguments run
  });

  it('a call whose process dies while it runs still counts for its batch’s limits when the batch goes on', async () => {
    const h = new Harness(
      aSetup(
        [
          { type: 'max_count_per_step', tool_name: 'a', max_count_limit: 1 },
          { type: 'exclusive_group', tools: ['b', 'c'] },
        ],
        [aTool('a', 'side_effecting'), aTool('b', 'side_effecting'), aTool('c', 'side_effecting')],
      ),
    );
    h.invoker.hanging.add('a');
    h.invoker.hanging.add('b');
    // each time the process dies while the call runs; the same batch goes on in a new executor
    const dies = async (name: string) => {
      void h.call(name);
      while (!h.invoker.calls.some((c) => c.name === name)) await Promise.resolve();
      h.restart();
      h.heartbeat();
    };
    await dies('a');
    await dies('b');
    h.invoker.hanging.clear();
    expect(await h.run(['a {"other":1}', 'c'])).toBe('RuleViolation RuleViolation');
    expect(h.invoker.calls.map((c) => c.name)).toEqual(['a', 'b']);
  });

  it('a throwing tool is an error return', async () => {
    const h = new Harness(aSetup());
    h.executor = new (
      h.executor
        .constructor as typeof import('../../../../src/core/executor/tool-executor').ToolExecutor
    )({
      clock: h.clock,
      store: h.store,
      invoker: {
        invoke: () => {
          throw new Error('boom');
        },
      },
      consent: h.consent,
      limits: { batchTtlMs: 1000 },
    });
    const out = await h.call('a');
    expect([out.kind, out.status, out.returnValue, out.error?.type]).toEqual([
      'executed',
      'error',
      'boom',
      'ToolError',
    ]);
  });

  it('a cancelled run starts nothing', async () => {
    const h = new Harness(aSetup());
    const ac = new AbortController();
    ac.abort();
    const out = await h.executor.execute(
      h.setup,
      h.pass,
      { toolCallId: 'c', name: 'a', arguments: {} },
      { ...h.meta(), signal: ac.signal },
    );
    expect(code(out)).toBe('Cancelled');
    expect(h.invoker.calls).toHaveLength(0);
  });
});

describe('executeBatch', () => {
  it('runs contiguous read_only calls concurrently, others alone, every call answered in order', async () => {
    const tools = [aTool('r1'), aTool('r2'), aTool('w', 'side_effecting'), aTool('r3')];
    const h = new Harness(aSetup([], tools));
    let inFlight = 0;
    let maxInFlight = 0;
    const order: string[] = [];
    h.executor = new (
      h.executor
        .constructor as typeof import('../../../../src/core/executor/tool-executor').ToolExecutor
    )({
      clock: h.clock,
      store: h.store,
      consent: h.consent,
      limits: { batchTtlMs: 1000 },
      invoker: {
        invoke: async (tool) => {
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          order.push(`start ${tool.name}`);
          await Promise.resolve();
          await Promise.resolve();
          order.push(`end ${tool.name}`);
          inFlight--;
          return { status: tool.name === 'r2' ? 'error' : 'success', value: tool.name };
        },
      },
    });
    const calls = ['r1', 'r2', 'nope', 'w', 'r3'].map((name, i) => ({
      toolCallId: `c${i}`,
      name,
      arguments: {},
    }));
    const out = await h.executor.executeBatch(h.setup, h.pass, calls, h.meta());
    expect(out.map((o) => `${o.toolCallId}:${code(o)}`)).toEqual([
      'c0:ok',
      'c1:err',
      'c2:NotFound',
      'c3:ok',
      'c4:ok',
    ]);
    expect(order.slice(0, 2)).toEqual(['start r1', 'start r2']);
    expect(order.indexOf('start w')).toBeGreaterThan(order.indexOf('end r2'));
    expect(maxInFlight).toBe(2);
  });

  it('concurrent calls still respect max calls and exclusive groups', async () => {
    const h = new Harness(
      aSetup([
        { type: 'max_count_per_step', tool_name: 'a', max_count_limit: 1 },
        { type: 'exclusive_group', tools: ['b', 'c'] },
      ]),
    );
    const calls = ['a', 'a', 'b', 'c'].map((name, i) => ({
      toolCallId: `c${i}`,
      name,
      arguments: {},
    }));
    const out = await h.executor.executeBatch(h.setup, h.pass, calls, h.meta());
    expect(out.map(code)).toEqual(['ok', 'RuleViolation', 'ok', 'RuleViolation']);
  });

  it('a deduplicated read_only tool runs once per group: an identical second call finds the first', async () => {
    for (const mode of ['reject', 'return_cached'] as const) {
      const h = new Harness(
        aSetup([{ type: 'dedupe', tool_name: 'a', window_seconds: 300, mode }]),
      );
      const calls = [
        { toolCallId: 'c0', name: 'a', arguments: { q: 'x', k: { a: 1, b: 2 } } },
        { toolCallId: 'c1', name: 'b', arguments: {} },
        { toolCallId: 'c2', name: 'a', arguments: { k: { b: 2, a: 1 }, q: 'x' } },
      ];
      const out = await h.executor.executeBatch(h.setup, h.pass, calls, h.meta());
      expect(out.map((o) => o.kind)).toEqual([
        'executed',
        'executed',
        mode === 'reject' ? 'refused' : 'cached',
      ]);
      expect(h.invoker.calls.map((c) => c.name)).toEqual(['a', 'b']);
    }
  });

  it('each outcome is handed over before the next call starts (the caller stores it there), a concurrent group’s as each finishes', async () => {
    const h = new Harness(
      aSetup(
        [],
        [aTool('w1', 'side_effecting'), aTool('w2', 'side_effecting'), aTool('r1'), aTool('r2')],
      ),
    );
    h.invoker.hanging.add('r2'); // still running when r1's outcome is handed over
    const seen: string[] = [];
    const calls = ['w1', 'w2', 'r1', 'r2'].map((name, i) => ({
      toolCallId: `c${i}`,
      name,
      arguments: {},
    }));
    const batch = h.executor.executeBatch(h.setup, h.pass, calls, h.meta(), (o) => {
      seen.push(`${o.toolCallId} after ${h.invoker.calls.map((c) => c.name).join(',')}`);
      return Promise.resolve();
    });
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual(['c0 after w1', 'c1 after w1,w2', 'c2 after w1,w2,r1,r2']);
    h.timers.fireAll(); // r2 times out
    expect((await batch).map(code)).toEqual(['ok', 'ok', 'ok', 'Timeout']);
    expect(seen).toHaveLength(4);
  });

  it('when the caller cannot store an outcome, no later call starts', async () => {
    const h = new Harness(
      aSetup([], [aTool('w1', 'side_effecting'), aTool('w2', 'side_effecting')]),
    );
    const calls = ['w1', 'w2'].map((name, i) => ({ toolCallId: `c${i}`, name, arguments: {} }));
    await expect(
      h.executor.executeBatch(h.setup, h.pass, calls, h.meta(), () =>
        Promise.reject(new Error('LEASE_LOST')),
      ),
    ).rejects.toThrow('LEASE_LOST');
    expect(h.invoker.calls.map((c) => c.name)).toEqual(['w1']);
    expect(await h.executor.wasStarted('agent-1', 'c1', null)).toBe(false);
  });

  it('with ordering rules, calls run one by one so each sees the one before', async () => {
    const h = new Harness(
      aSetup([{ type: 'requires_preceding_tools', tool_name: 'b', tools: ['a'] }]),
    );
    const calls = ['a', 'b'].map((name, i) => ({ toolCallId: `c${i}`, name, arguments: {} }));
    expect((await h.executor.executeBatch(h.setup, h.pass, calls, h.meta())).map(code)).toEqual([
      'ok',
      'ok',
    ]);
  });
});

describe('start constraints and exit requirements', () => {
  it('executeStartConstraints runs the start tools with their args once per pass', async () => {
    const h = new Harness(aSetup([{ type: 'run_first', tool_name: 'a', args: { boot: true } }]));
    const out = await h.executor.executeStartConstraints(h.setup, h.pass, h.meta());
    expect(out.map((o) => [o.toolName, code(o), o.arguments])).toEqual([
      ['a', 'ok', { boot: true }],
    ]);
    expect(await h.executor.executeStartConstraints(h.setup, h.pass, h.meta())).toEqual([]);
    h.heartbeat();
    expect(await h.executor.executeStartConstraints(h.setup, h.pass, h.meta())).toHaveLength(1);
  });

  test.each<[string, ToolRule[], string[], string]>([
    [
      'required_before_exit pending until it ran',
      [
        { type: 'required_before_exit', tool_name: 'a' },
        { type: 'required_before_exit', tool_name: 'b' },
      ],
      [],
      'a b',
    ],
    [
      'required_before_exit shrinks as tools run',
      [
        { type: 'required_before_exit', tool_name: 'a' },
        { type: 'required_before_exit', tool_name: 'b' },
      ],
      ['b'],
      'a',
    ],
    [
      'a failed run satisfies it: it ran (as Letta registers a failed call)',
      [{ type: 'required_before_exit', tool_name: 'a' }],
      ['a!'],
      '',
    ],
    [
      'satisfied across heartbeats (batch scope)',
      [{ type: 'required_before_exit', tool_name: 'a' }],
      ['a', 'heartbeat'],
      '',
    ],
    [
      'a new batch needs it again',
      [{ type: 'required_before_exit', tool_name: 'a' }],
      ['a', 'batch'],
      'a',
    ],
    [
      'requires_following: once triggered, its tools are pending',
      [{ type: 'requires_following_tools', tool_name: 'a', tools: ['b', 'c'] }],
      ['a'],
      'b c',
    ],
    [
      'requires_following: pending shrinks, survives a heartbeat',
      [{ type: 'requires_following_tools', tool_name: 'a', tools: ['b', 'c'] }],
      ['a', 'b', 'heartbeat'],
      'c',
    ],
    [
      'requires_following: untriggered, nothing pending',
      [{ type: 'requires_following_tools', tool_name: 'a', tools: ['b'] }],
      ['c'],
      '',
    ],
  ])('%s', async (_s, rules, script, pending) => {
    const h = new Harness(aSetup(rules));
    await h.run(script);
    expect((await h.executor.pendingExitRequirements(h.setup, h.pass)).join(' ')).toBe(pending);
  });

  it('executeExitRequirements runs what is pending, after which nothing is', async () => {
    const h = new Harness(
      aSetup([
        { type: 'required_before_exit', tool_name: 'c' },
        { type: 'exit_loop', tool_name: 'a' },
      ]),
    );
    await h.call('a');
    expect(h.executor.shouldExitLoop(h.pass)).toBe(true);
    const out = await h.executor.executeExitRequirements(h.setup, h.pass, h.meta());
    expect(out.map((o) => `${o.toolName}:${code(o)}`)).toEqual(['c:ok']);
    expect(await h.executor.pendingExitRequirements(h.setup, h.pass)).toEqual([]);
  });
});

describe('pruning', () => {
  it('drops expired dedupe entries, abandoned batches and old claims; keeps live ones', async () => {
    const h = new Harness(aSetup([], [aTool('a', 'side_effecting')]));
    await h.call('a');
    h.executor = new (
      h.executor
        .constructor as typeof import('../../../../src/core/executor/tool-executor').ToolExecutor
    )({
      clock: h.clock,
      store: h.store,
      invoker: h.invoker,
      consent: h.consent,
      limits: { batchTtlMs: 600_000 },
    });
    h.clock.advance(299_000);
    await h.executor.pruneExpired();
    expect([h.store.dedupe.size, h.store.batches.size, h.store.claims.size]).toEqual([1, 1, 1]);
    h.clock.advance(301_000);
    await h.executor.pruneExpired();
    expect([h.store.dedupe.size, h.store.batches.size, h.store.claims.size]).toEqual([0, 0, 0]);
  });

  it('keeps a parked batch past the TTL until it goes on', async () => {
    const h = new Harness(aSetup([]));
    await h.call('a');
    await h.executor.parkBatch(h.pass.batchId);
    h.clock.advance(2 * 86_400_000);
    await h.executor.pruneExpired();
    expect(h.store.batches.size).toBe(1);
    await h.call('a'); // the batch went on: the usual TTL applies again
    h.clock.advance(86_400_000);
    await h.executor.pruneExpired();
    expect(h.store.batches.size).toBe(0);
  });
});

describe("a run's state writes carry its lease tenure (a store with shared leases fences them by it)", () => {
  it('counters and cooldowns at admission, batch state and dedupe once a call ran: alone, run together, or answered by the client', async () => {
    const tools = [
      aTool('pay', 'side_effecting'),
      aTool('r1'),
      aTool('r2'),
      { ...aTool('ask'), kind: 'client' as const },
    ];
    const rules: ToolRule[] = [
      { type: 'max_calls', tool_name: 'pay', max_count_limit: 3 },
      { type: 'cooldown', tool_name: 'pay', seconds: 1 },
    ];
    const h = new Harness(aSetup(rules, tools));
    const meta = { ...h.meta(), tenure: 'tenure-7' };
    const tenures: Record<string, unknown[]> = {};
    const store: ExecutorStateStore = h.store;
    const watch = <K extends 'claimToolCall' | 'saveBatch' | 'putDedupe' | 'setLastExecution'>(
      method: K,
      tenureOf: (args: Parameters<ExecutorStateStore[K]>) => unknown,
    ) => {
      const real = (store[method] as (...a: unknown[]) => unknown).bind(store);
      jest.spyOn(store, method).mockImplementation(((...a: Parameters<ExecutorStateStore[K]>) => {
        (tenures[method] ??= []).push(tenureOf(a));
        return real(...a);
      }) as never);
    };
    watch('claimToolCall', (a) => a[5]);
    watch('saveBatch', (a) => a[3]?.tenure);
    watch('putDedupe', (a) => a[4]);
    watch('setLastExecution', (a) => a[4]);

    const sent = ['pay', 'r1', 'r2', 'ask'].map((name, i) => ({
      toolCallId: `c${i}`,
      name,
      arguments: {},
    }));
    const first = await h.executor.executeBatch(h.setup, h.pass, sent, meta);
    expect(first.map(code)).toEqual(['ok', 'ok', 'ok', 'client']);
    const answered = await h.executor.executeBatch(
      h.setup,
      h.pass,
      [
        {
          ...sent[3],
          clientResult: {
            status: 'success',
            value: 'ask ok',
            startedAt: first[3].startedAt!,
            heartbeat: false,
          },
        },
      ],
      meta,
    );
    expect(answered.map(code)).toEqual(['ok']);
    // pay (admitted, ran), r1 and r2 (ran together), ask (admitted for the client, then its answer)
    expect(tenures).toEqual({
      claimToolCall: Array(4).fill('tenure-7'),
      saveBatch: Array(6).fill('tenure-7'),
      setLastExecution: ['tenure-7'],
      putDedupe: ['tenure-7'],
    });
  });
});
