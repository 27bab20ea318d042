import {
  mergeProperties,
  validateIdentityInput,
} from '../../../src/core/identities/validate-identity';

const limits = { max_properties: 2, max_properties_bytes: 200, max_agents: 2 };
const base = { identifier_key: 'k', name: 'n', identity_type: 'user' };

describe('validateIdentityInput', () => {
  const rows: [string, unknown, boolean, string[]][] = [
    ['a full create', base, false, []],
    ['create needs key, name and type', {}, false, ['identifier_key', 'identity_type', 'name']],
    ['an update may leave them out', { name: 'x' }, true, []],
    ['unknown type', { ...base, identity_type: 'robot' }, false, ['identity_type']],
    [
      'property values match their type',
      {
        ...base,
        properties: [
          { key: 'a', value: 1, type: 'string' },
          { key: 'b', value: [], type: 'json' },
        ],
      },
      false,
      ['properties[0].value', 'properties[1].value'],
    ],
    [
      'a property key twice',
      {
        ...base,
        properties: [
          { key: 'a', value: 'x', type: 'string' },
          { key: 'a', value: 'y', type: 'string' },
        ],
      },
      false,
      ['properties[1].key'],
    ],
    ['too many properties', { ...base, properties: [1, 2, 3] }, false, ['properties']],
    [
      'too large properties',
      { ...base, properties: [{ key: 'a', value: 'x'.repeat(300), type: 'string' }] },
      false,
      ['properties'],
    ],
    ['too many agent ids', { ...base, agent_ids: ['a', 'b', 'c'] }, false, ['agent_ids']],
    [
      'block_ids are refused, an empty list is not',
      { ...base, block_ids: ['b'] },
      false,
      ['block_ids'],
    ],
    ['an empty block_ids list passes', { ...base, block_ids: [] }, false, []],
    ['not an object', [1], false, ['(body)']],
  ];
  it.each(rows)('%s', (_name, input, partial, paths) => {
    const r = validateIdentityInput(input, limits, partial);
    expect(r.problems.map((p) => p.path).sort()).toEqual(paths);
    expect(r.draft === null).toBe(paths.length > 0);
  });
});

describe('mergeProperties (Letta: by key, the given win in place, new keys appended)', () => {
  const p = (key: string, value: string) => ({ key, value, type: 'string' as const });
  it.each([
    ['nothing given', [p('a', '1')], [], [p('a', '1')]],
    ['a new key is appended', [p('a', '1')], [p('b', '2')], [p('a', '1'), p('b', '2')]],
    [
      'a key given replaces in place',
      [p('a', '1'), p('b', '2')],
      [p('a', '9')],
      [p('a', '9'), p('b', '2')],
    ],
  ])('%s', (_name, current, given, expected) => {
    expect(mergeProperties(current, given)).toEqual(expected);
  });
});
