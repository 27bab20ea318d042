import Ajv2020 from 'ajv/dist/2020';
import { toolRuleJsonSchema, validateToolRules } from '../../../src/core/rules/validate-tool-rules';
import { LIMITS } from '../../support/input-limits';

const TOOLS = ['send_message', 'search', 'issue_refund', 'deploy', 'run_tests'];

describe('validateToolRules: accepted rules', () => {
  const ok: [string, unknown][] = [
    ['run_first', { type: 'run_first', tool_name: 'search' }],
    [
      'start_constraint alias with args',
      { type: 'start_constraint', tool_name: 'search', args: { q: 'x' } },
    ],
    ['exit_loop', { type: 'exit_loop', tool_name: 'send_message' }],
    ['continue_loop', { type: 'continue_loop', tool_name: 'search' }],
    [
      'constrain_child_tools',
      { type: 'constrain_child_tools', tool_name: 'search', children: ['send_message'] },
    ],
    [
      "constrain_child_tools with Letta's child_arg_nodes",
      {
        type: 'constrain_child_tools',
        tool_name: 'search',
        children: ['send_message', 'deploy'],
        child_arg_nodes: [{ name: 'deploy', args: { env: 'staging' } }, { name: 'send_message' }],
      },
    ],
    [
      'parent_last_tool',
      { type: 'parent_last_tool', tool_name: 'deploy', children: ['run_tests'] },
    ],
    [
      'conditional',
      {
        type: 'conditional',
        tool_name: 'search',
        child_output_mapping: { found: 'send_message', none: 'search' },
        default_child: null,
        require_output_mapping: true,
      },
    ],
    [
      'max_count_per_step',
      { type: 'max_count_per_step', tool_name: 'issue_refund', max_count_limit: 3 },
    ],
    [
      'max_calls alias, limit 0',
      { type: 'max_calls', tool_name: 'issue_refund', max_count_limit: 0 },
    ],
    ['required_before_exit', { type: 'required_before_exit', tool_name: 'run_tests' }],
    [
      'requires_preceding_tools',
      { type: 'requires_preceding_tools', tool_name: 'deploy', tools: ['run_tests'] },
    ],
    [
      'requires_following_tools',
      { type: 'requires_following_tools', tool_name: 'deploy', tools: ['send_message'] },
    ],
    ['exclusive_group', { type: 'exclusive_group', tools: ['deploy', 'run_tests'], group: 'ci' }],
    ['cooldown', { type: 'cooldown', tool_name: 'deploy', seconds: 600 }],
    [
      'dedupe',
      { type: 'dedupe', tool_name: 'issue_refund', window_seconds: 300, mode: 'return_cached' },
    ],
    [
      'requires_consent with scope',
      { type: 'requires_consent', tool_name: 'issue_refund', scope: 'refunds' },
    ],
    ['requires_approval (Letta)', { type: 'requires_approval', tool_name: 'deploy' }],
    [
      'prompt_template kept',
      { type: 'exit_loop', tool_name: 'send_message', prompt_template: '<x/>' },
    ],
  ];
  it.each(ok)('%s', (_name, rule) => {
    const { rules, problems } = validateToolRules([rule], TOOLS, LIMITS);
    expect(problems).toEqual([]);
    expect(rules).toEqual([rule]);
  });

  // the OpenAPI document's rule schema is derived from the same table: it accepts what the validator does
  const schema = new Ajv2020({ strict: false }).compile(toolRuleJsonSchema());
  it.each(ok)('%s matches the documented schema', (_name, rule) => {
    expect(schema(rule) ? [] : schema.errors).toEqual([]);
  });
  it.each([
    ['no type', { tool_name: 'search' }],
    ['unknown type', { type: 'nope', tool_name: 'search' }],
    ['cooldown without seconds', { type: 'cooldown', tool_name: 'search' }],
    ['children not a list', { type: 'constrain_child_tools', tool_name: 'a', children: 'b' }],
    ['dedupe mode unknown', { type: 'dedupe', tool_name: '*', window_seconds: 1, mode: 'x' }],
  ])('the schema refuses a rule of the wrong shape: %s', (_name, rule) => {
    expect(schema(rule)).toBe(false);
    expect(validateToolRules([rule], TOOLS, LIMITS).problems).not.toEqual([]);
  });
});

describe('validateToolRules: problems carry JSON paths', () => {
  const bad: [string, unknown, string, RegExp][] = [
    ['not a list', { type: 'exit_loop' }, 'tool_rules', /list/],
    ['rule not an object', ['exit_loop'], 'tool_rules[0]', /object/],
    ['missing type', [{ tool_name: 'search' }], 'tool_rules[0].type', /required/],
    [
      'unknown type',
      [{ type: 'teleport', tool_name: 'search' }],
      'tool_rules[0].type',
      /unknown rule type/,
    ],
    ['missing tool_name', [{ type: 'exit_loop' }], 'tool_rules[0].tool_name', /required/],
    [
      'tool_name wrong type',
      [{ type: 'exit_loop', tool_name: 7 }],
      'tool_rules[0].tool_name',
      /tool name/,
    ],
    [
      'unknown tool',
      [{ type: 'exit_loop', tool_name: 'nope' }],
      'tool_rules[0].tool_name',
      /does not have/,
    ],
    [
      'empty children',
      [{ type: 'constrain_child_tools', tool_name: 'search', children: [] }],
      'tool_rules[0].children',
      /empty/,
    ],
    [
      'children not a list',
      [{ type: 'constrain_child_tools', tool_name: 'search', children: 'send_message' }],
      'tool_rules[0].children',
      /list/,
    ],
    [
      'unknown child',
      [{ type: 'constrain_child_tools', tool_name: 'search', children: ['send_message', 'ghost'] }],
      'tool_rules[0].children[1]',
      /does not have/,
    ],
    [
      'child_arg_nodes naming a tool that is not a child',
      [
        {
          type: 'constrain_child_tools',
          tool_name: 'search',
          children: ['send_message'],
          child_arg_nodes: [{ name: 'deploy', args: {} }],
        },
      ],
      'tool_rules[0].child_arg_nodes[0].name',
      /children/,
    ],
    [
      'child_arg_nodes args not an object',
      [
        {
          type: 'constrain_child_tools',
          tool_name: 'search',
          children: ['send_message'],
          child_arg_nodes: [{ name: 'send_message', args: 'hi' }],
        },
      ],
      'tool_rules[0].child_arg_nodes[0].args',
      /object/,
    ],
    [
      'empty mapping',
      [{ type: 'conditional', tool_name: 'search', child_output_mapping: {} }],
      'tool_rules[0].child_output_mapping',
      /empty/,
    ],
    [
      'mapping to unknown tool',
      [{ type: 'conditional', tool_name: 'search', child_output_mapping: { a: 'ghost' } }],
      'tool_rules[0].child_output_mapping.a',
      /does not have/,
    ],
    [
      'negative limit',
      [{ type: 'max_count_per_step', tool_name: 'search', max_count_limit: -1 }],
      'tool_rules[0].max_count_limit',
      /0 or more/,
    ],
    [
      'fractional limit',
      [{ type: 'max_count_per_step', tool_name: 'search', max_count_limit: 1.5 }],
      'tool_rules[0].max_count_limit',
      /whole/,
    ],
    [
      'limit as string',
      [{ type: 'max_calls', tool_name: 'search', max_count_limit: '3' }],
      'tool_rules[0].max_count_limit',
      /whole/,
    ],
    [
      'negative cooldown',
      [{ type: 'cooldown', tool_name: 'deploy', seconds: -5 }],
      'tool_rules[0].seconds',
      /from 1 to 315360000/,
    ],
    [
      'a cooldown of 0 s (it would mean nothing)',
      [{ type: 'cooldown', tool_name: 'deploy', seconds: 0 }],
      'tool_rules[0].seconds',
      /from 1/,
    ],
    [
      'negative dedupe window',
      [{ type: 'dedupe', tool_name: 'deploy', window_seconds: -1, mode: 'reject' }],
      'tool_rules[0].window_seconds',
      /from 0 to/,
    ],
    [
      'a dedupe window of 1e308 s (it reached SQL as Infinity)',
      [{ type: 'dedupe', tool_name: 'deploy', window_seconds: 1e308, mode: 'reject' }],
      'tool_rules[0].window_seconds',
      /whole number of seconds from 0 to 315360000/,
    ],
    [
      'a fractional cooldown',
      [{ type: 'cooldown', tool_name: 'deploy', seconds: 1.5 }],
      'tool_rules[0].seconds',
      /whole number/,
    ],
    [
      'a cooldown past limits.max_duration_seconds',
      [{ type: 'cooldown', tool_name: 'deploy', seconds: 315360001 }],
      'tool_rules[0].seconds',
      /to 315360000/,
    ],
    [
      'unknown dedupe mode',
      [{ type: 'dedupe', tool_name: 'deploy', window_seconds: 10, mode: 'maybe' }],
      'tool_rules[0].mode',
      /dedupe mode/,
    ],
    [
      'empty exclusive group',
      [{ type: 'exclusive_group', tools: [] }],
      'tool_rules[0].tools',
      /empty/,
    ],
    [
      'preceding tool unknown',
      [{ type: 'requires_preceding_tools', tool_name: 'deploy', tools: ['lint'] }],
      'tool_rules[0].tools[0]',
      /does not have/,
    ],
    [
      'scope wrong type',
      [{ type: 'requires_consent', tool_name: 'deploy', scope: 3 }],
      'tool_rules[0].scope',
      /string/,
    ],
    [
      'prompt_template wrong type',
      [{ type: 'exit_loop', tool_name: 'send_message', prompt_template: 1 }],
      'tool_rules[0].prompt_template',
      /string/,
    ],
    [
      'second rule bad, index kept',
      [
        { type: 'exit_loop', tool_name: 'send_message' },
        { type: 'exit_loop', tool_name: 'send_message' },
        { type: 'cooldown', tool_name: 'deploy' },
      ],
      'tool_rules[2].seconds',
      /required/,
    ],
  ];
  it.each(bad)('%s → %s', (_name, input, path, message) => {
    const { problems } = validateToolRules(input, TOOLS, LIMITS);
    expect(problems).toContainEqual({ path, message: expect.stringMatching(message) });
  });

  it('more rules than limits.max_rules_per_agent: one LIMIT problem, the rules are not looked at', () => {
    const many = Array.from({ length: LIMITS.max_rules_per_agent + 1 }, () => ({ type: 'x' }));
    expect(validateToolRules(many, TOOLS, LIMITS).problems).toEqual([
      {
        path: 'tool_rules',
        message: `has ${many.length} items; at most ${LIMITS.max_rules_per_agent} (limits.max_rules_per_agent)`,
        limit: 'limits.max_rules_per_agent',
      },
    ]);
  });

  it('reports every problem, not only the first', () => {
    const { problems } = validateToolRules(
      [
        { type: 'teleport' },
        { type: 'exit_loop', tool_name: 'ghost' },
        { type: 'cooldown', tool_name: 'deploy', seconds: -1 },
      ],
      TOOLS,
      LIMITS,
    );
    expect(problems.map((p) => p.path)).toEqual([
      'tool_rules[0].type',
      'tool_rules[1].tool_name',
      'tool_rules[2].seconds',
    ]);
  });

  it('uses the base path given', () => {
    const { problems } = validateToolRules(
      [{ type: 'exit_loop' }],
      TOOLS,
      LIMITS,
      'agent.tool_rules',
    );
    expect(problems[0].path).toBe('agent.tool_rules[0].tool_name');
  });
});

describe('validateToolRules: normalising', () => {
  it('treats null/undefined as no rules', () => {
    expect(validateToolRules(undefined, TOOLS, LIMITS)).toEqual({ rules: [], problems: [] });
    expect(validateToolRules(null, TOOLS, LIMITS)).toEqual({ rules: [], problems: [] });
  });

  it('keeps duplicate rules once (key order does not matter)', () => {
    const { rules } = validateToolRules(
      [
        { type: 'cooldown', tool_name: 'deploy', seconds: 5 },
        { seconds: 5, tool_name: 'deploy', type: 'cooldown' },
        { type: 'cooldown', tool_name: 'deploy', seconds: 6 },
      ],
      TOOLS,
      LIMITS,
    );
    expect(rules).toEqual([
      { type: 'cooldown', tool_name: 'deploy', seconds: 5 },
      { type: 'cooldown', tool_name: 'deploy', seconds: 6 },
    ]);
  });

  it('drops unknown extra fields', () => {
    const { rules } = validateToolRules(
      [{ type: 'exit_loop', tool_name: 'send_message', colour: 'blue' }],
      TOOLS,
      LIMITS,
    );
    expect(rules).toEqual([{ type: 'exit_loop', tool_name: 'send_message' }]);
  });
});

describe('validateToolRules: "*" (each tool)', () => {
  const accepted: [string, Record<string, unknown>][] = [
    ['max_count_per_step', { type: 'max_count_per_step', tool_name: '*', max_count_limit: 3 }],
    ['max_calls (alias)', { type: 'max_calls', tool_name: '*', max_count_limit: 1 }],
    ['dedupe', { type: 'dedupe', tool_name: '*', window_seconds: 60, mode: 'reject' }],
    ['requires_approval (a pattern: every tool)', { type: 'requires_approval', tool_name: '*' }],
  ];
  it.each(accepted)('%s accepts tool_name "*"', (_n, rule) => {
    expect(validateToolRules([rule], TOOLS, LIMITS)).toEqual({ rules: [rule], problems: [] });
  });

  const refused: [string, Record<string, unknown>][] = [
    ['cooldown', { type: 'cooldown', tool_name: '*', seconds: 60 }],
    ['exit_loop', { type: 'exit_loop', tool_name: '*' }],
    ['exclusive_group member', { type: 'exclusive_group', tools: ['*', 'deploy'] }],
  ];
  it.each(refused)('%s does not ("*" means nothing there)', (_n, rule) => {
    const { problems } = validateToolRules([rule], TOOLS, LIMITS);
    expect(problems[0].message).toMatch(/names tool "\*", which the agent does not have/);
  });
});

describe('validateToolRules: consent rules name tools or patterns, attached or not', () => {
  it.each([
    ['a pattern', 'delete_*'],
    ['a tool the agent does not have (yet)', 'wire_money'],
  ])('%s is accepted', (_n, name) => {
    const rule = { type: 'requires_consent', tool_name: name };
    expect(validateToolRules([rule], TOOLS, LIMITS)).toEqual({ rules: [rule], problems: [] });
  });

  it.each(['delete user', 'drop;table', '', 'x'.repeat(65)])('%j is refused', (name) => {
    const { problems } = validateToolRules(
      [{ type: 'requires_approval', tool_name: name }],
      TOOLS,
      LIMITS,
    );
    expect(problems[0]).toMatchObject({ path: 'tool_rules[0].tool_name' });
  });
});
