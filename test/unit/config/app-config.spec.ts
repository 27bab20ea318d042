import { spawnSync } from 'node:child_process';
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

  it.each([
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '70000' }, 'server.port'],
    [{ LOG_LEVEL: 'loud' }, 'log_level'],
    [{ DATABASE_URL: 'mysql://x' }, 'database.url'],
    [{ API_KEYS: 'nocolon' }, 'API_KEYS'],
    [{ CONFIG_FILE: '/nonexistent.yaml' }, 'CONFIG_FILE'],
  ])('rejects %j naming %s', (env, key) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    try {
      loadConfig(env);
    } catch (e) {
      expect((e as ConfigError).key).toBe(key);
      expect((e as Error).message).toContain(key);
    }
  });

  it('rejects a bad override with the key path', () => {
    expect(() => loadConfig({}, { tool_executor: { tool_timeout_seconds: -1 } })).toThrow(
      /tool_executor\.tool_timeout_seconds/,
    );
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
