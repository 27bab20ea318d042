import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ConfigError, loadConfig } from '../../../src/config/app-config';

describe('loadConfig', () => {
  it('defaults to SQLite on 127.0.0.1:8283, open mode', () => {
    const c = loadConfig({});
    expect(c.server).toMatchObject({ host: '127.0.0.1', port: 8283 });
    expect(c.database.url).toBeNull();
    expect(c.database.sqlite_path).toMatch(/data[/\\]agent-server\.sqlite$/);
    expect(c.auth.api_keys).toEqual([]);
  });

  it('takes overrides from the environment', () => {
    const c = loadConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u@h/db',
      LOG_LEVEL: 'debug',
      API_KEYS: 'k1:teamA, k2:teamB',
    });
    expect(c.server).toMatchObject({ host: '0.0.0.0', port: 9000 });
    expect(c.database.url).toBe('postgres://u@h/db');
    expect(c.log_level).toBe('debug');
    expect(c.auth.api_keys).toEqual([
      { key: 'k1', tenant: 'teamA' },
      { key: 'k2', tenant: 'teamB' },
    ]);
  });

  it.each(['0.0.0.0', '::', '::1', 'localhost', 'agents.example.com'])(
    'listens on HOST=%s',
    (host) => {
      expect(loadConfig({ HOST: host }).server.host).toBe(host);
    },
  );

  it.each([
    [{ PORT: 'abc' }, 'PORT'],
    // decimal digits only: Number() would take these as 80 and 1000
    [{ PORT: '0x50' }, 'PORT'],
    [{ PORT: '1e3' }, 'PORT'],
    // a URL or a phrase is no address to listen on (it failed later, in listen, without the key's name)
    [{ HOST: 'http://127.0.0.1' }, 'server.host'],
    [{ HOST: 'my host' }, 'server.host'],
    [{ PORT: '70000' }, 'server.port'],
    [{ LOG_LEVEL: 'loud' }, 'log_level'],
    [{ DATABASE_URL: 'mysql://x' }, 'database.url'],
    [{ API_KEYS: 'nocolon' }, 'API_KEYS'],
    [{ CONFIG_FILE: '/nonexistent.yaml' }, 'CONFIG_FILE'],
    [{ DATABASE_URL: 'postgres://%zz' }, 'database.url'],
    [{ OPENAI_BASE_URL: 'notaurl' }, 'models.openai.base_url'],
    [{ API_KEYS: 'k1:a,k1:b' }, 'auth.api_keys[1]'],
    [{ API_KEYS: 'k1:a,k2:*' }, 'auth.api_keys[1].tenant'],
  ])('rejects %j naming %s', (env, key) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    try {
      loadConfig(env);
    } catch (e) {
      expect((e as ConfigError).key).toBe(key);
      expect((e as Error).message).toContain(key);
    }
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      'a batch timer past a day',
      { processing: { max_batch_seconds: 3_000_000 } },
      /max_batch_seconds/,
    ],
    [
      'a prune timer past a day',
      { tool_executor: { prune_interval_seconds: 3_000_000 } },
      /prune_interval_seconds/,
    ],
    [
      'a tool timer past a day',
      { tool_executor: { tool_timeout_seconds: 90_000 } },
      /tool_timeout_seconds/,
    ],
    [
      'a model timeout past an hour',
      { models: { openai: { timeout_seconds: 3_601 } } },
      /models\.openai\.timeout_seconds/,
    ],
    [
      'an unknown API key field',
      { auth: { api_keys: [{ key: 'k', tenant: 't', role: 'admin' }] } },
      /auth\.api_keys\[0\]\.role/,
    ],
    [
      'secret bounds crossed',
      { webhooks: { secret_min_length: 200, secret_max_length: 20 } },
      /webhooks\.secret_min_length/,
    ],
    [
      'a page budget past what one JSON answer can hold',
      { limits: { max_page_bytes: 1024 ** 3 } },
      /limits\.max_page_bytes/,
    ],
    [
      'a negative tool-call index bound',
      { models: { max_tool_call_index: -1 } },
      /max_tool_call_index/,
    ],
    [
      'an error body read of 0 bytes',
      { models: { max_error_body_bytes: 0 } },
      /max_error_body_bytes/,
    ],
    [
      'a Retry-After cap past an hour',
      { models: { max_retry_after_seconds: 7200 } },
      /max_retry_after/,
    ],
    ['a usage cap below a million', { models: { max_usage_tokens: 10 } }, /max_usage_tokens/],
    ['endless context retries', { models: { max_context_retries: 100 } }, /max_context_retries/],
    [
      'no model labels at all',
      { observability: { labels: { max_models: 0 } } },
      /labels\.max_models/,
    ],
    ['labels cut to nothing', { observability: { labels: { max_chars: 0 } } }, /labels\.max_chars/],
    [
      "a tenant's callback share past the whole",
      { webhooks: { callback_max_in_flight: 2, callback_max_in_flight_per_tenant: 3 } },
      /webhooks\.callback_max_in_flight_per_tenant/,
    ],
    [
      'a delivery claim that ends before its attempt may',
      { webhooks: { request_timeout_seconds: 30, claim_seconds: 30 } },
      /webhooks\.claim_seconds.* from 31 to 3600/,
    ],
    [
      'a negative callback waiting bound',
      { webhooks: { callback_max_waiting_per_tenant: -1 } },
      /callback_max_waiting_per_tenant/,
    ],
    [
      'a WebSocket buffer below 1 KiB',
      { websocket: { max_buffered_bytes: 10 } },
      /websocket\.max_buffered_bytes/,
    ],
    [
      'a tool header value bound of 0',
      { limits: { max_tool_header_value_chars: 0 } },
      /limits\.max_tool_header_value_chars/,
    ],
  ])('rejects %s', (_what, file, message) => {
    expect(() => loadConfig({}, file)).toThrow(message);
  });

  const provider = (over: Record<string, unknown>) => ({
    models: { providers: [{ name: 'p', base_url: 'http://10.0.0.5/v1', ...over }] },
  });
  it.each<[string, Record<string, unknown>, RegExp]>([
    ['a reserved name', { name: 'openai' }, /models\.providers\[0\]\.name/],
    ['a bad base URL', { base_url: 'ftp://x' }, /models\.providers\[0\]\.base_url/],
    ['two key sources', { api_key: 'a', api_key_secret: 'B' }, /give one of/],
    ['an unset key variable', { api_key_env: 'NOPE_NOT_SET' }, /NOPE_NOT_SET is not set/],
    ['an unknown field', { key: 'x' }, /models\.providers\[0\]\.key: unknown field/],
    ['a negative rate', { requests_per_minute: -1 }, /\[0\]\.requests_per_minute: must be/],
    [
      "a rate on tenants' own keys",
      { api_key_secret: 'MY_KEY', requests_per_minute: 60 },
      /\[0\]\.requests_per_minute: bounds the operator's key/,
    ],
  ])('models.providers: rejects %s', (_what, over, message) => {
    expect(() => loadConfig({}, provider(over))).toThrow(message);
  });

  it('requests_per_minute: no bound unless set, on models.openai and on each provider', () => {
    const plain = loadConfig({}, provider({}));
    expect([
      plain.models.openai.requests_per_minute,
      plain.models.providers[0].requests_per_minute,
    ]).toEqual([0, 0]);
    const set = loadConfig(
      {},
      {
        models: {
          openai: { requests_per_minute: 500 },
          providers: [{ name: 'p', base_url: 'http://10.0.0.5/v1', requests_per_minute: 60 }],
        },
      },
    );
    expect([
      set.models.openai.requests_per_minute,
      set.models.providers[0].requests_per_minute,
    ]).toEqual([500, 60]);
    expect(() => loadConfig({}, { models: { openai: { requests_per_minute: 1.5 } } })).toThrow(
      /models\.openai\.requests_per_minute/,
    );
  });

  it('models.providers: the key comes from the named environment variable', () => {
    const c = loadConfig({ PROXY_KEY: 'sk-p' }, provider({ api_key_env: 'PROXY_KEY' }));
    expect(c.models.providers[0]).toMatchObject({ name: 'p', type: 'openai', api_key: 'sk-p' });
  });

  const embedder = (over: Record<string, unknown>, rest: Record<string, unknown> = {}) => ({
    models: {
      embeddings: {
        providers: [
          {
            name: 'e',
            base_url: 'http://10.0.0.5/v1',
            models: [{ name: 'm', dimensions: 8 }],
            ...over,
          },
        ],
        ...rest,
      },
    },
  });
  it.each<[string, Record<string, unknown>, Record<string, unknown>, RegExp]>([
    ['no models', { models: [] }, {}, /embeddings\.providers\[0\]\.models/],
    ['a model without dimensions', { models: [{ name: 'm' }] }, {}, /dimensions/],
    ['a bad type', { type: 'cohere' }, {}, /\.type: must be "openai" or "hashed"/],
    ['an openai provider without base_url', { base_url: undefined }, {}, /\.base_url/],
    ['a hashed provider with a base_url', { type: 'hashed' }, {}, /hashed provider is offline/],
    ['an unset key variable', { api_key_env: 'NOPE_NOT_SET' }, {}, /NOPE_NOT_SET is not set/],
    ['an unknown field', { dims: 3 }, {}, /\[0\]\.dims: unknown field/],
    ['a batch size of 0', { batch_size: 0 }, {}, /batch_size: must be/],
    ['an unknown default', {}, { default_model: 'e/other' }, /default_model: "e\/other" is not/],
  ])('models.embeddings: rejects %s', (_what, over, rest, message) => {
    expect(() => loadConfig({}, embedder(over, rest))).toThrow(message);
  });

  it('models.embeddings: a provider with its defaults and the key from the environment', () => {
    const c = loadConfig(
      { EMB_KEY: 'sk-e' },
      embedder({ api_key_env: 'EMB_KEY' }, { default_model: 'e/m' }),
    );
    expect(c.models.embeddings).toEqual({
      providers: [
        {
          name: 'e',
          type: 'openai',
          base_url: 'http://10.0.0.5/v1',
          api_key: 'sk-e',
          models: [{ name: 'm', dimensions: 8 }],
          batch_size: 64,
          timeout_seconds: 30,
          max_retries: 2,
          max_input_chars: 8000,
          chunk_size: 300,
        },
      ],
      default_model: 'e/m',
      max_scan_passages: 10000,
    });
    expect(loadConfig({}).models.embeddings.providers).toEqual([]);
  });

  it('agents.default_agent_type: memgpt_agent unless set; a type the server does not run stops the boot', () => {
    expect(loadConfig({}).agents.default_agent_type).toBe('memgpt_agent');
    const v1 = loadConfig({}, { agents: { default_agent_type: 'letta_v1_agent' } });
    expect(v1.agents.default_agent_type).toBe('letta_v1_agent');
    expect(() => loadConfig({}, { agents: { default_agent_type: 'sleeptime_agent' } })).toThrow(
      /agents\.default_agent_type: must be one of memgpt_agent, memgpt_v2_agent, letta_v1_agent/,
    );
  });

  it('rejects a bad override with the key path', () => {
    expect(() => loadConfig({}, { tool_executor: { tool_timeout_seconds: -1 } })).toThrow(
      /tool_executor\.tool_timeout_seconds/,
    );
    expect(() => loadConfig({}, { database: { sqlite_cache_mib: 0 } })).toThrow(
      /database\.sqlite_cache_mib/,
    );
  });

  it('rejects unknown keys with a suggestion, naming the file, and reports every problem at once', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'config-'));
    const file = path.join(dir, 'local.yaml');
    writeFileSync(
      file,
      'log_levl: debug\nserver:\n  prot: 9000\n  host: ""\nprocessing: { zzz: 1 }\n',
    );
    let err: ConfigError | undefined;
    try {
      loadConfig({ CONFIG_FILE: file });
    } catch (e) {
      err = e as ConfigError;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect(err!.problems).toEqual([
      { key: `${file}: log_levl`, problem: 'unknown key (did you mean "log_level"?)' },
      { key: `${file}: server.prot`, problem: 'unknown key (did you mean "port"?)' },
      { key: `${file}: processing.zzz`, problem: 'unknown key' },
      { key: 'server.host', problem: 'must be a non-empty string, got ""' },
    ]);
    expect(err!.message.split('\n')).toHaveLength(4);
  });

  it.each([
    ['null', 'limits: null'],
    ['a number', 'consent: 5'],
  ])('a section given as %s is one line, not one per setting', (_n, yaml) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'config-'));
    const file = path.join(dir, 'local.yaml');
    writeFileSync(file, `${yaml}\n`);
    let err: ConfigError | undefined;
    try {
      loadConfig({ CONFIG_FILE: file });
    } catch (e) {
      err = e as ConfigError;
    }
    expect(err!.problems).toHaveLength(1);
    expect(err!.problems[0]).toMatchObject({
      key: `${file}: ${yaml.split(':')[0]}`,
      problem: expect.stringMatching(/^must be a mapping of settings \(.*\), got (null|5)$/),
    });
  });

  it('quotas: defaults for every tenant, other numbers for some; each checked, tenant names as given', () => {
    const c = loadConfig({}, { quotas: { blocks: 7, tenants: { 'team.a': { blocks: 2 } } } });
    expect(c.quotas.defaults).toMatchObject({ agents: 10000, blocks: 7, running_runs: 256 });
    expect(c.quotas.tenants).toEqual({ 'team.a': { blocks: 2 } });
    let err: ConfigError | undefined;
    try {
      loadConfig(
        {},
        {
          quotas: {
            running_runs: 0,
            tenants: { t1: { blokcs: 1, agents: -1 }, t2: 5 },
          },
        },
      );
    } catch (e) {
      err = e as ConfigError;
    }
    expect(err!.problems.map((p) => [p.key, p.problem])).toEqual([
      ['quotas.running_runs', 'must be a whole number from 1 to 1000000000, got 0'],
      ['quotas.tenants.t1.blokcs', 'unknown key (did you mean "blocks"?)'],
      ['quotas.tenants.t1.agents', 'must be a whole number from 0 to 1000000000, got -1'],
      ['quotas.tenants.t2', 'must be a mapping of quotas (agents, tools, blocks, …)'],
    ]);
  });

  it('quotas.stored_bytes: 10 GiB for every tenant by default, up to 2^50 bytes (past the other quotas’ bound)', () => {
    expect(loadConfig({}, {}).quotas.defaults.stored_bytes).toBe(10 * 1024 ** 3);
    const c = loadConfig(
      {},
      { quotas: { stored_bytes: 2 ** 40, tenants: { big: { stored_bytes: 2 ** 50 } } } },
    );
    expect(c.quotas.defaults.stored_bytes).toBe(2 ** 40);
    expect(c.quotas.tenants.big.stored_bytes).toBe(2 ** 50);
    let err: ConfigError | undefined;
    try {
      loadConfig({}, { quotas: { stored_bytes: 2 ** 51, tenants: { t: { stored_bytes: 1.5 } } } });
    } catch (e) {
      err = e as ConfigError;
    }
    expect(err!.problems.map((p) => [p.key, p.problem])).toEqual([
      ['quotas.stored_bytes', `must be a whole number from 0 to ${2 ** 50}, got ${2 ** 51}`],
      ['quotas.tenants.t.stored_bytes', `must be a whole number from 0 to ${2 ** 50}, got 1.5`],
    ]);
  });

  it('a setting that became a quota is named with where it went', () => {
    expect(() => loadConfig({}, { limits: { max_agents_per_tenant: 5 } })).toThrow(
      /limits\.max_agents_per_tenant: moved to quotas\.agents/,
    );
    expect(() => loadConfig({}, { secrets: { max_per_tenant: 5 } })).toThrow(
      /secrets\.max_per_tenant: moved to quotas\.secrets/,
    );
  });

  it.each(['AGENTS_DIR', 'TOOLS_DIR', 'MCP_DIR'])(
    'a %s that is a file, not a folder, is refused naming its setting (it failed later, naming neither)',
    (variable) => {
      const file = path.join(mkdtempSync(path.join(tmpdir(), 'config-')), 'not-a-folder');
      writeFileSync(file, '');
      const key = `paths.${variable.toLowerCase()}`;
      expect(() => loadConfig({ [variable]: file })).toThrow(
        `invalid configuration: ${key}: must be a folder, but ${file} is a file`,
      );
      // a folder that does not exist is fine: nothing to load
      expect(loadConfig({ [variable]: `${file}-missing` }).paths).toBeDefined();
    },
  );

  it('rejects an unknown override key', () => {
    expect(() => loadConfig({}, { tool_executor: { tool_timeout_secs: 5 } })).toThrow(
      /tool_executor\.tool_timeout_secs: unknown key \(did you mean "tool_timeout_seconds"\?\)/,
    );
  });

  it('stops the boot naming every misspelled key, one line each, exit code 1', () => {
    const root = path.join(__dirname, '..', '..', '..');
    const dir = mkdtempSync(path.join(tmpdir(), 'config-'));
    const file = path.join(dir, 'local.yaml');
    writeFileSync(file, 'log_levl: debug\nserver:\n  prot: 9000\n');
    const res = spawnSync(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', path.join(root, 'src', 'main.ts')],
      { cwd: root, env: { ...process.env, CONFIG_FILE: file }, encoding: 'utf8', timeout: 60000 },
    );
    expect(res.status).toBe(1);
    const lines = res.stderr.trim().split('\n');
    expect(lines).toEqual([
      `invalid configuration: ${file}: log_levl: unknown key (did you mean "log_level"?)`,
      `invalid configuration: ${file}: server.prot: unknown key (did you mean "port"?)`,
    ]);
  });

  it('stops the boot with one line and exit code 1 on an invalid value', () => {
    const root = path.join(__dirname, '..', '..', '..');
    const res = spawnSync(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', path.join(root, 'src', 'main.ts')],
      { cwd: root, env: { ...process.env, PORT: 'not-a-port' }, encoding: 'utf8', timeout: 60000 },
    );
    expect(res.status).toBe(1);
    const lines = res.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('PORT');
  });
});
