import {
  credentialNamed,
  keepUnread,
  literalValuesOf,
  referencedValuesOf,
  referencesOnly,
  secretArgsOf,
  shownArgs,
  shownValue,
} from '../../../../src/core/secrets/declared-values';

describe('shownValue: references as written, literal text that may be a credential hidden', () => {
  it.each<[string, string]>([
    ['${API_KEY}', '${API_KEY}'],
    ['Bearer ${API_KEY}', 'Bearer ${API_KEY}'],
    ['Basic ${USER}:${PASS}', 'Basic ${USER}:${PASS}'],
    ['"${A}"; ${B}', '"${A}"; ${B}'],
    ['sk-live-123', '[redacted]'],
    ['Bearer sk-live-123', '[redacted]'],
    ['application/json', '[redacted]'],
    // QA: a literal beside a reference was shown as written
    ['sk-live-123 ${API_KEY}', '[redacted]${API_KEY}'],
    ['Bearer sk-live-123 ${API_KEY}', '[redacted]${API_KEY}'],
    ['${API_KEY}-sk-live-123', '${API_KEY}[redacted]'],
    ['${A}:literal-pass', '${A}[redacted]'],
  ])('%s → %s', (declared, shown) => {
    expect(shownValue(declared)).toBe(shown);
    expect(referencesOnly(declared)).toBe(declared === shown);
  });
});

describe('keepUnread: a declaration sent back as it was read keeps what it could not read', () => {
  const stored = { A: 'sk-1', B: 'lit-1 ${K}', C: 'Bearer ${K}', D: 'old' };
  it.each<[string, Record<string, string>, Record<string, string>]>([
    ['as shown', { A: '[redacted]', B: '[redacted]${K}', C: 'Bearer ${K}' }, stored],
    [
      'changed',
      { A: 'sk-2', B: '${K}', D: '[redacted]x' },
      { A: 'sk-2', B: '${K}', D: '[redacted]x' },
    ],
    ['a new name', { E: '[redacted]' }, { E: '[redacted]' }],
  ])('%s', (_case, sent, kept) => {
    const expected = Object.fromEntries(Object.keys(sent).map((k) => [k, kept[k]]));
    expect(keepUnread(sent, stored)).toEqual(expected);
  });
});

describe('what a call’s output must not show', () => {
  const declared = {
    Authorization: 'Bearer ${TOKEN}',
    'X-Api-Key': 'sk-literal-1',
    'X-Partner': 'partner-literal-2',
    'X-Mixed-Token': 'pre-${OTHER}',
    Accept: 'application/json',
    'X-Region': '${REGION}',
  };

  it('literal text, whatever the entry’s name, by the entry (the text shown as [redacted])', () => {
    expect(literalValuesOf(declared)).toEqual([
      { label: 'X-Api-Key', value: 'sk-literal-1' },
      { label: 'X-Partner', value: 'partner-literal-2' },
      { label: 'X-Mixed-Token', value: 'pre-' },
      { label: 'Accept', value: 'application/json' },
    ]);
  });

  it('of an MCP server’s env (a process’s configuration), credential-named entries only', () => {
    expect(
      literalValuesOf(
        { TOOL_PREFIX: 'local_', DATA_DIR: '/srv/data', API_KEY: 'sk-env-1' },
        credentialNamed,
      ),
    ).toEqual([{ label: 'API_KEY', value: 'sk-env-1' }]);
  });

  it('each resolved reference by its name; one with no value (never sent) is not listed', () => {
    expect(
      referencedValuesOf(declared, { TOKEN: 'tok-1', OTHER: 'oth-1', REGION: 'eu-west-1' }),
    ).toEqual([
      { label: 'TOKEN', value: 'tok-1' },
      { label: 'OTHER', value: 'oth-1' },
      { label: 'REGION', value: 'eu-west-1' },
    ]);
    expect(referencedValuesOf({ A: '${NOPE}' }, {})).toEqual([]);
  });

  it('a literal Authorization: the whole value and the credential after its scheme', () => {
    expect(literalValuesOf({ Authorization: 'Basic dXNlcjpwdw==' })).toEqual([
      { label: 'Authorization', value: 'Basic dXNlcjpwdw==' },
      { label: 'Authorization', value: 'dXNlcjpwdw==' },
    ]);
  });
});

describe('arguments: the values of credential-named flags', () => {
  const args = ['server.js', '--api-key', 'sk-arg-1', '--token=tok-2', '--port', '8080', '-v'];
  it('are hidden when shown', () => {
    expect(shownArgs(args)).toEqual([
      'server.js',
      '--api-key',
      '[redacted]',
      '--token=[redacted]',
      '--port',
      '8080',
      '-v',
    ]);
  });
  it('and are secret material of the call', () => {
    expect(secretArgsOf(args)).toEqual([
      { label: 'api-key', value: 'sk-arg-1' },
      { label: 'token', value: 'tok-2' },
    ]);
  });
});
