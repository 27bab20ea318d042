import {
  baseToolRules,
  BaseToolRulesRequest,
  modelExcludedFromBaseToolRules,
} from '../../../src/core/agents/base-tool-rules';

const MEMGPT = ['send_message', 'core_memory_append', 'core_memory_replace', 'conversation_search'];
const V1 = ['memory_replace', 'memory_insert', 'conversation_search'];
const memgptRules = [
  { type: 'exit_loop', tool_name: 'send_message' },
  { type: 'continue_loop', tool_name: 'core_memory_append' },
  { type: 'continue_loop', tool_name: 'core_memory_replace' },
  { type: 'continue_loop', tool_name: 'conversation_search' },
];
const v1Rules = V1.map((tool_name) => ({ type: 'continue_loop', tool_name }));
const base: BaseToolRulesRequest = {
  agent_type: 'memgpt_agent',
  hasToolRules: false,
  model: 'gpt-4o-mini',
};

// Letta 0.16.8 agent_manager.create_agent_async, case by case
describe('baseToolRules (Letta create_agent_async)', () => {
  it.each<[string, Partial<BaseToolRulesRequest>, string[], unknown[]]>([
    [
      'memgpt_agent by default: terminal send_message, memory tools continue',
      {},
      MEMGPT,
      memgptRules,
    ],
    ['include_base_tool_rules: false adds none', { include_base_tool_rules: false }, MEMGPT, []],
    [
      'include_base_tool_rules: true adds them',
      { include_base_tool_rules: true },
      MEMGPT,
      memgptRules,
    ],
    ['letta_v1_agent without tool_rules adds none', { agent_type: 'letta_v1_agent' }, V1, []],
    [
      'letta_v1_agent given tool_rules adds them',
      { agent_type: 'letta_v1_agent', hasToolRules: true },
      V1,
      v1Rules,
    ],
    [
      'letta_v1_agent asking for them gets them',
      { agent_type: 'letta_v1_agent', include_base_tool_rules: true },
      V1,
      v1Rules,
    ],
    [
      "letta_v1_agent without base tools: Letta's v1 default does not apply",
      { agent_type: 'letta_v1_agent', include_base_tools: false },
      ['conversation_search'],
      [{ type: 'continue_loop', tool_name: 'conversation_search' }],
    ],
    ['an excluded model (gpt-5) gets none by default', { model: 'gpt-5' }, MEMGPT, []],
    [
      'an excluded model asking for them gets them',
      { model: 'gpt-5', include_base_tool_rules: true },
      MEMGPT,
      memgptRules,
    ],
    ['"mini" overrides the exclusion (gpt-5-mini)', { model: 'gpt-5-mini' }, MEMGPT, memgptRules],
    ['claude-3-5-sonnet is excluded', { model: 'claude-3-5-sonnet-20241022' }, MEMGPT, []],
    [
      'other tools get no rule; memory_finish_edits is terminal; archival tools continue',
      {},
      [
        'issue_refund',
        'memory_finish_edits',
        'archival_memory_search',
        'send_message_to_agent_async',
      ],
      [
        { type: 'exit_loop', tool_name: 'memory_finish_edits' },
        { type: 'continue_loop', tool_name: 'archival_memory_search' },
        { type: 'exit_loop', tool_name: 'send_message_to_agent_async' },
      ],
    ],
    ['react_agent with no tools gets none', { agent_type: 'react_agent' }, [], []],
  ])('%s', (_case, req, tools, expected) => {
    expect(baseToolRules({ ...base, ...req }, tools)).toEqual(expected);
  });

  it.each([
    ['gpt-5', true],
    ['gpt-5-mini', false],
    // Letta's quirk, kept: "gemini" contains "mini", so its gemini-2.5-pro exclusion never applies
    ['gemini-2.5-pro', false],
    ['claude-4-sonnet-latest', true],
    ['gpt-4o', false],
    ['default', false],
  ])('model %s excluded: %s', (model, excluded) => {
    expect(modelExcludedFromBaseToolRules(model)).toBe(excluded);
  });
});
