import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';

/** The whole configuration, validated once at boot. Nothing else reads process.env. */
export interface AppConfig {
  server: { host: string; port: number; body_limit_bytes: number; json_max_depth: number };
  database: { url: string | null; sqlite_path: string; schema: string | null };
  log_level: LogLevel;
  auth: { api_keys: ApiKeyEntry[] };
  paths: { agents_dir: string; tools_dir: string };
  tool_executor: ToolExecutorDefaults;
  processing: {
    default_max_steps: number;
    max_tokens_per_batch: number;
    max_batch_seconds: number;
    max_reminders: number;
    shutdown_grace_seconds: number;
  };
  models: {
    openai: {
      api_key: string | null;
      base_url: string;
      timeout_seconds: number;
      max_retries: number;
    };
  };
  /** Environment values that `${NAME}` placeholders (http tool headers) may resolve. */
  secrets_env: Record<string, string>;
}

export interface ToolExecutorDefaults {
  tool_timeout_seconds: number;
  consent_timeout_seconds: number;
  dedupe_window_seconds: number;
  prune_interval_seconds: number;
  batch_state_ttl_seconds: number;
  cache_max_entries: number;
}

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
export interface ApiKeyEntry {
  key: string;
  tenant: string;
}

export const DEFAULT_TENANT = 'default';

/** Boot stops with this: one line naming the key and what is wrong. */
export class ConfigError extends Error {
  constructor(
    readonly key: string,
    problem: string,
  ) {
    super(`invalid configuration: ${key}: ${problem}`);
  }
}

type Env = Record<string, string | undefined>;
type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function deepMerge(base: Obj, over: Obj): Obj {
  const out: Obj = { ...base };
  for (const [k, v] of Object.entries(over)) {
    out[k] = isObj(v) && isObj(out[k]) ? deepMerge(out[k], v) : v;
  }
  return out;
}

function readYaml(file: string, key: string): Obj {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ConfigError(key, `cannot read ${file}: ${(e as Error).message.split('\n')[0]}`);
  }
  if (doc == null) return {};
  if (!isObj(doc)) throw new ConfigError(key, `${file} must hold a mapping`);
  return doc;
}

function parseApiKeys(raw: string): ApiKeyEntry[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((pair) => {
      const i = pair.lastIndexOf(':');
      if (i <= 0 || i === pair.length - 1) {
        throw new ConfigError('API_KEYS', `expected key:tenant pairs separated by commas`);
      }
      return { key: pair.slice(0, i), tenant: pair.slice(i + 1) };
    });
}

/** Reads config/default.yaml (or CONFIG_FILE), then an optional local file, then the environment. */
export function loadConfig(env: Env = {}, overrides: Obj = {}, cwd = process.cwd()): AppConfig {
  const defaultsFile = path.join(projectRoot(), 'config', 'default.yaml');
  let raw = readYaml(defaultsFile, 'config/default.yaml');
  if (env.CONFIG_FILE) {
    const file = path.resolve(cwd, env.CONFIG_FILE);
    if (!existsSync(file)) throw new ConfigError('CONFIG_FILE', `no file at ${file}`);
    raw = deepMerge(raw, readYaml(file, 'CONFIG_FILE'));
  }
  const fromEnv: Obj = {};
  const set = (keyPath: string[], value: unknown) => {
    let o = fromEnv;
    for (const k of keyPath.slice(0, -1)) o = o[k] = isObj(o[k]) ? o[k] : {};
    o[keyPath[keyPath.length - 1]] = value;
  };
  if (env.HOST !== undefined) set(['server', 'host'], env.HOST);
  if (env.PORT !== undefined) set(['server', 'port'], numberFrom('PORT', env.PORT));
  if (env.DATABASE_URL !== undefined) set(['database', 'url'], env.DATABASE_URL || null);
  if (env.SQLITE_PATH !== undefined) set(['database', 'sqlite_path'], env.SQLITE_PATH);
  if (env.LOG_LEVEL !== undefined) set(['log_level'], env.LOG_LEVEL);
  if (env.API_KEYS !== undefined) set(['auth', 'api_keys'], parseApiKeys(env.API_KEYS));
  if (env.AGENTS_DIR !== undefined) set(['paths', 'agents_dir'], env.AGENTS_DIR);
  if (env.TOOLS_DIR !== undefined) set(['paths', 'tools_dir'], env.TOOLS_DIR);
  if (env.OPENAI_API_KEY !== undefined) set(['models', 'openai', 'api_key'], env.OPENAI_API_KEY);
  if (env.OPENAI_BASE_URL !== undefined) set(['models', 'openai', 'base_url'], env.OPENAI_BASE_URL);
  raw = deepMerge(deepMerge(raw, fromEnv), overrides);

  const secrets: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (typeof v === 'string') secrets[k] = v;
  return validate(raw, cwd, secrets);
}

/** The folder holding config/default.yaml: two levels up from src/config, three from dist/src/config. */
export function projectRoot(): string {
  let dir = __dirname;
  while (!existsSync(path.join(dir, 'config', 'default.yaml'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new ConfigError('config/default.yaml', 'not found above ' + __dirname);
    dir = up;
  }
  return dir;
}

function numberFrom(key: string, v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n)) throw new ConfigError(key, `"${v}" is not a number`);
  return n;
}

function validate(raw: Obj, cwd: string, secrets: Record<string, string>): AppConfig {
  const get = (keyPath: string): unknown =>
    keyPath.split('.').reduce<unknown>((o, k) => (isObj(o) ? o[k] : undefined), raw);
  const int = (key: string, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    const v = get(key);
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw new ConfigError(
        key,
        `must be a whole number from ${min} to ${max}, got ${JSON.stringify(v)}`,
      );
    }
    return v;
  };
  const str = (key: string, nullable = false): string => {
    const v = get(key);
    if (nullable && v == null) return null as unknown as string;
    if (typeof v !== 'string' || v.trim() === '') {
      throw new ConfigError(key, `must be a non-empty string, got ${JSON.stringify(v)}`);
    }
    return v;
  };

  const level = get('log_level');
  if (!['error', 'warn', 'info', 'debug'].includes(level as string)) {
    throw new ConfigError(
      'log_level',
      `must be one of error, warn, info, debug; got ${JSON.stringify(level)}`,
    );
  }
  const url = str('database.url', true);
  if (url !== null && !/^postgres(ql)?:\/\//.test(url)) {
    throw new ConfigError('database.url', 'must be a postgres:// URL, or unset for SQLite');
  }
  const keys = get('auth.api_keys');
  if (!Array.isArray(keys)) throw new ConfigError('auth.api_keys', 'must be a list');
  const apiKeys = keys.map((k, i) => {
    if (
      !isObj(k) ||
      typeof k.key !== 'string' ||
      !k.key ||
      typeof k.tenant !== 'string' ||
      !k.tenant
    ) {
      throw new ConfigError(`auth.api_keys[${i}]`, 'must be {key, tenant} with non-empty strings');
    }
    return { key: k.key, tenant: k.tenant };
  });

  return {
    server: {
      host: str('server.host'),
      port: int('server.port', 0, 65535),
      body_limit_bytes: int('server.body_limit_bytes', 1024),
      json_max_depth: int('server.json_max_depth', 2, 10000),
    },
    database: {
      url,
      sqlite_path: path.resolve(cwd, str('database.sqlite_path')),
      schema: str('database.schema', true),
    },
    log_level: level as LogLevel,
    auth: { api_keys: apiKeys },
    paths: {
      agents_dir: path.resolve(cwd, str('paths.agents_dir')),
      tools_dir: path.resolve(cwd, str('paths.tools_dir')),
    },
    tool_executor: {
      tool_timeout_seconds: int('tool_executor.tool_timeout_seconds', 1),
      consent_timeout_seconds: int('tool_executor.consent_timeout_seconds', 1),
      dedupe_window_seconds: int('tool_executor.dedupe_window_seconds', 0),
      prune_interval_seconds: int('tool_executor.prune_interval_seconds', 1),
      batch_state_ttl_seconds: int('tool_executor.batch_state_ttl_seconds', 1),
      cache_max_entries: int('tool_executor.cache_max_entries', 10),
    },
    processing: {
      default_max_steps: int('processing.default_max_steps', 1, 10000),
      max_tokens_per_batch: int('processing.max_tokens_per_batch', 0),
      max_batch_seconds: int('processing.max_batch_seconds', 1),
      max_reminders: int('processing.max_reminders', 0, 100),
      shutdown_grace_seconds: int('processing.shutdown_grace_seconds', 0, 3600),
    },
    models: {
      openai: {
        api_key: str('models.openai.api_key', true),
        base_url: str('models.openai.base_url'),
        timeout_seconds: int('models.openai.timeout_seconds', 1),
        max_retries: int('models.openai.max_retries', 0, 10),
      },
    },
    secrets_env: secrets,
  };
}
