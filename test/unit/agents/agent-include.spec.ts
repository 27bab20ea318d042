import { AGENT_RELATIONS, parseAgentInclude } from '../../../src/core/agents/agent-include';

describe('parseAgentInclude', () => {
  const rows: [string, Record<string, unknown>, string[] | 'all', number][] = [
    ['nothing asked: every relation', {}, 'all', 0],
    ['one include', { include: 'agent.tools' }, ['tools'], 0],
    ['repeated (the SDK)', { include: ['agent.blocks', 'agent.tags'] }, ['blocks', 'tags'], 0],
    [
      'comma-separated',
      { include: 'agent.secrets,agent.identities' },
      ['identities', 'secrets'],
      0,
    ],
    [
      'legacy names mapped',
      { include_relationships: ['memory', 'identity_ids'] },
      ['blocks', 'identities'],
      0,
    ],
    ['legacy unknown names ignored', { include_relationships: 'constructor' }, [], 0],
    [
      'an unknown include is a problem',
      { include: ['agent.tools', 'agent.passwords'] },
      ['tools'],
      1,
    ],
    ['not prefixed is unknown', { include: 'tools' }, [], 1],
  ];
  it.each(rows)('%s', (_name, query, expected, problems) => {
    const r = parseAgentInclude(query);
    expect([...r.include].sort()).toEqual(
      expected === 'all' ? [...AGENT_RELATIONS].sort() : expected,
    );
    expect(r.problems).toHaveLength(problems);
  });
});
