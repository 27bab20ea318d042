import { withApprovalRules, type ToolRule } from '../../../../src/core/rules/tool-rule';

/** Letta's default_requires_approval, as rows: rules so far / tools given that ask for it → rules after. */
describe('withApprovalRules', () => {
  const approval = (tool_name: string): ToolRule => ({ type: 'requires_approval', tool_name });
  const rows: [string, ToolRule[], string[], ToolRule[]][] = [
    ['nothing given', [], [], []],
    ['one tool', [], ['wire'], [approval('wire')]],
    ['named twice: one rule', [], ['wire', 'wire'], [approval('wire')]],
    ['already approved: unchanged', [approval('wire')], ['wire'], [approval('wire')]],
    [
      'our requires_consent counts as the same rule',
      [{ type: 'requires_consent', tool_name: 'wire', scope: 'agent' }],
      ['wire'],
      [{ type: 'requires_consent', tool_name: 'wire', scope: 'agent' }],
    ],
    [
      'other rules kept, in order, the new one last',
      [{ type: 'exit_loop', tool_name: 'wire' }, approval('read')],
      ['wire', 'read'],
      [{ type: 'exit_loop', tool_name: 'wire' }, approval('read'), approval('wire')],
    ],
  ];
  it.each(rows)('%s', (_name, rules, given, after) => {
    expect(withApprovalRules(rules, given)).toEqual(after);
  });
});
