import { existsSync, readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { AGENT_TYPES, type AgentType } from '../core/agents/agent-type';
import { unknownKeyMessage } from '../core/did-you-mean';
import type { InputLimits } from '../core/limits';
import {
  QUOTA_NAMES,
  type QuotaName,
  type Quotas,
  type QuotaSettings,
} from '../core/limits/quotas';
import { isHostPattern } from '../core/net/host-policy';
import type { ModelAnswerBounds } from '../models/model-provider';
import type { LabelBounds } from '../observability/labels';

/** The longest timer setting: Node's timers hold at most ~24.8 days, and a longer delay fires at once. */
const DAY_SECONDS = 86_400;

/** The whole configuration, validated once at boot. Nothing else reads process.env. */
export interface AppConfig {
  server: {
    host: string;
    port: number;
    body_limit_bytes: number;
    json_max_depth: number;
    /** Web page origins (`https://app.example.com`) besides the server's own that may call it from a browser. */
    allowed_origins: string[];
    /**
     * Open mode: the names (besides IP addresses and localhost) requests may be addressed to, checked when the
     * server listens on the loopback or this is set (DNS rebinding; src/auth/request-origin.ts).
     */
    allowed_hosts: string[];
  };
  database: {
    url: string | null;
    sqlite_path: string;
    schema: string | null;
    /** SQLite: a PASSIVE checkpoint on a worker thread this often; 0 = inside the commits, SQLite's default. */
    sqlite_checkpoint_ms: number;
    /** SQLite: the page cache of the server's connection, in MiB. */
    sqlite_cache_mib: number;
    /**
     * Each in-memory cache of records (agent records, agents' resolved tools and webhook subscriptions on
     * SQLite; pending and resolved consent requests) up to this many bytes, estimated (`approxBytes`).
     */
    record_cache_bytes: number;
  };
  log_level: LogLevel;
  log_format: 'json' | 'pretty' | 'auto';
  observability: {
    metrics: { enabled: boolean; token: string | null };
    tracing: {
      exporter: 'none' | 'otlp' | 'memory';
      otlp_endpoint: string | null;
      service_name: string;
    };
    labels: LabelBounds;
  };
  auth: { api_keys: ApiKeyEntry[] };
  paths: { agents_dir: string; tools_dir: string; mcp_dir: string };
  tool_executor: ToolExecutorDefaults;
  mcp: McpSettings;
  processing: {
    default_max_steps: number;
    max_tokens_per_batch: number;
    max_batch_seconds: number;
    max_reminders: number;
    shutdown_grace_seconds: number;
    max_client_tools: number;
    max_client_tool_bytes: number;
    compaction_max_messages: number;
    compaction_timeout_seconds: number;
    compaction_max_summary_chars: number;
    max_images_per_message: number;
    max_image_bytes: number;
    /** Context windows kept in memory (one per agent conversation, the least recently used dropped). */
    /** Messages one agent may have waiting for their turn (past it: 429 RUN_QUEUE_FULL). */
    max_queued_runs: number;
    context_cache_windows: number;
    /** Tokens those windows may hold together (a window holding more is not kept). */
    context_cache_tokens: number;
    /** Forks of forks a conversation may descend from (each level is one more shared range to read). */
    max_fork_depth: number;
  };
  /** With the bounds on what a model endpoint answers (ModelAnswerBounds: docs/security.md). */
  models: ModelAnswerBounds & {
    /**
     * How many times a model call the endpoint refused as longer than its context window is made again
     * with a smaller context (a step: half the room the context took; a summary: the newer half of its
     * messages). Letta compacts and retries up to 3 times.
     */
    max_context_retries: number;
    openai: {
      api_key: string | null;
      base_url: string;
      timeout_seconds: number;
      max_retries: number;
      /** Models that accept images (`name`, or a prefix ending in `*`). */
      vision_models: string[];
      /** Calls a minute to the provider from this instance, shared fairly between tenants; 0 = no bound. */
      requests_per_minute: number;
    };
    /** Further operator-declared providers; `openai` (above) and `scripted` always exist. */
    providers: ModelProviderConfig[];
    embeddings: EmbeddingSettings;
  };
  webhooks: WebhookSettings;
  /** The agent_type of an agent created without one (docs/letta-compatibility.md, "Agent types"). */
  agents: { default_agent_type: AgentType };
  /** Letta's agent files (`.af`): the largest upload and the most messages one carries either way. */
  agent_files: { max_bytes: number; max_messages: number; max_agents: number };
  rate_limit: { requests_per_second: number; burst: number };
  websocket: {
    max_connections_per_key: number;
    max_subscriptions_per_connection: number;
    max_frames_per_second: number;
    /** Bytes a connection may have queued and its client not yet read; past it the connection is closed. */
    max_buffered_bytes: number;
  };
  /** Server-Sent Events streams (runs, messages with streaming, conversations). */
  streaming: {
    max_streams_per_key: number;
    /**
     * Bytes a stream may have written and its client not yet read; past it the stream is ended (as a
     * client disconnect: the run goes on) and its buffers freed.
     */
    max_buffered_bytes: number;
  };
  consent: {
    max_pending_per_agent: number;
    /** Unrevoked, unexpired grants of one agent (past it a decision that makes one: 409 GRANT_LIMIT). */
    max_active_grants_per_agent: number;
    /** Revoked and expired grants are deleted this long after (their audit rows stay). */
    grant_retention_days: number;
  };
  limits: InputLimits & {
    /** Bounded scans (search_scan_*) running at once on an instance, every tenant's together … */
    search_scans_in_flight: number;
    /** … of them one tenant's … */
    search_scans_in_flight_per_tenant: number;
    /** … and one tenant's waiting for a slot (one more: 429 SEARCH_BUSY). */
    search_scans_waiting_per_tenant: number;
  };
  /** What one tenant may store, and its runs processing at once (per instance); per tenant if given. */
  quotas: QuotaSettings;
  cluster: ClusterSettings;
  secrets: SecretsSettings;
  identities: IdentitySettings;
  tools: { http: HttpToolSettings };
  /** The allow-listed environment values (`tools.http.env_allowlist`) that `${NAME}` may resolve. */
  secrets_env: Record<string, string>;
}

export interface SecretsSettings {
  /** AES-256-GCM key for secrets at rest; null: secrets cannot be stored over the API. */
  encryption_key: Buffer | null;
  /** On SQLite without encryption_key: generate (once) and use `<sqlite file>.secrets-key`. */
  generate_key_file: boolean;
  max_value_bytes: number;
  /** Secrets the operator sets per tenant (read-only over the API). */
  config: { tenant: string; name: string; value: string }[];
}

/** Letta's identities (docs/letta-compatibility.md); each bound answers 4xx. */
export interface IdentitySettings {
  max_per_agent: number;
  max_properties: number;
  max_properties_bytes: number;
  max_agents_per_request: number;
}

export interface HttpToolSettings {
  env_allowlist: string[];
  max_response_bytes: number;
  allowed_hosts: string[];
  denied_hosts: string[];
  max_redirects: number;
}

/** What `${NAME}` may name: an environment variable or a tenant secret. */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Several instances on one PostgreSQL database (docs/scale-out.md). */
export interface ClusterSettings {
  /** Unique among the running instances; a restart with the same id takes its own agents back at once. */
  instance_id: string;
  /** How long an agent's lease lasts without renewal: a dead instance's agents are taken over after it. */
  lease_duration_ms: number;
  /** Leases of busy agents are renewed, idle ones released, and orphaned agents looked for, this often. */
  lease_renew_interval_ms: number;
}

/** A model provider the operator declares: agents pick it by name (`<name>/<model>`). */
export interface ModelProviderConfig {
  name: string;
  type: 'openai';
  base_url: string;
  /** The operator's key (from the file or `api_key_env`), or null. */
  api_key: string | null;
  /** The key is the calling tenant's secret of this name (a tenant brings its own key). */
  api_key_secret: string | null;
  /** Model names offered (listed by the models API); empty = any name is passed through. */
  models: string[];
  context_window: number;
  timeout_seconds: number;
  max_retries: number;
  /** Models that accept images (`name`, or a prefix ending in `*`); none by default. */
  vision_models: string[];
  /** Calls a minute with the operator's key from this instance, shared fairly between tenants; 0 = no bound. */
  requests_per_minute: number;
}

/** Embedding models for archival memory's vector search (docs/memory.md); none = full text only. */
export interface EmbeddingSettings {
  providers: EmbeddingProviderConfig[];
  /** Handle `<provider>/<model>` given to archives and agents made without one; null = none. */
  default_model: string | null;
  /** A vector search compares the query with at most this many passages (the newest that match). */
  max_scan_passages: number;
}

/**
 * An embedding provider: `openai` calls an OpenAI-compatible `POST {base_url}/embeddings`; `hashed` is
 * offline and deterministic (hashed bag of words: similar means sharing words, NOT semantic).
 */
export interface EmbeddingProviderConfig {
  name: string;
  type: 'openai' | 'hashed';
  /** null for `hashed`. */
  base_url: string | null;
  /** The operator's key (from the file or `api_key_env`), or null. Never shown. */
  api_key: string | null;
  models: { name: string; dimensions: number }[];
  batch_size: number;
  timeout_seconds: number;
  max_retries: number;
  /** A text's first this many characters are embedded. */
  max_input_chars: number;
  /** Shown as Letta's `embedding_chunk_size` (passages are embedded whole, never split). */
  chunk_size: number;
}

export interface ToolExecutorDefaults {
  tool_timeout_seconds: number;
  consent_timeout_seconds: number;
  dedupe_window_seconds: number;
  prune_interval_seconds: number;
  batch_state_ttl_seconds: number;
  cache_max_entries: number;
  /** Each of those caches' keys and values together, estimated (a dedupe entry holds a tool result). */
  cache_max_bytes: number;
}

export interface WebhookSettings {
  url_max_length: number;
  secret_min_length: number;
  secret_max_length: number;
  max_attempts: number;
  retry_base_seconds: number;
  retry_max_seconds: number;
  request_timeout_seconds: number;
  poll_interval_seconds: number;
  claim_seconds: number;
  /** Attempts one instance has open at once; a slot is taken again as soon as one ends. */
  max_in_flight: number;
  /** Of those, one tenant's at most (the tenant with the fewest open attempts is served first). */
  max_in_flight_per_tenant: number;
  /**
   * Letta's run `callback_url` posts (one per ended run, stored with its end, retried as deliveries are)
   * open at once on this instance, and one tenant's share of them; `_waiting_per_tenant`: one tenant's
   * stored callbacks beyond its share not sent yet (any instance); past that a run's callback is not stored.
   */
  callback_max_in_flight: number;
  callback_max_in_flight_per_tenant: number;
  callback_max_waiting_per_tenant: number;
  retention_days: number;
  public_url: string | null;
}

export interface McpSettings {
  max_tools_per_server: number;
  max_tool_schema_bytes: number;
  max_description_chars: number;
  max_result_bytes: number;
  max_message_bytes: number;
  max_args: number;
  max_entries: number;
  max_string_chars: number;
  connect_timeout_seconds: number;
  idle_seconds: number;
  max_running_stdio: number;
  restart_backoff_max_seconds: number;
  stdio: { allowed_commands: string[] };
}

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
export interface ApiKeyEntry {
  key: string;
  tenant: string;
}

export const DEFAULT_TENANT = 'default';
/** The tenant of what the operator's files declare for every tenant (tools, MCP servers): no key's. */
export const GLOBAL_TOOL_TENANT = '*';

export interface ConfigProblem {
  key: string;
  problem: string;
}

/** Boot stops with this: one line per problem, each naming the key and what is wrong. */
export class ConfigError extends Error {
  /** The first problem's key. */
  readonly key: string;

  constructor(
    key: string,
    problem: string,
    readonly problems: ConfigProblem[] = [{ key, problem }],
  ) {
    super(problems.map((p) => `invalid configuration: ${p.key}: ${p.problem}`).join('\n'));
    this.key = problems[0].key;
  }

  static of(problems: ConfigProblem[]): ConfigError {
    return new ConfigError(problems[0].key, problems[0].problem, problems);
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
  const defaults = readYaml(defaultsFile, 'config/default.yaml');
  let raw = defaults;
  const problems: ConfigProblem[] = [];
  if (env.CONFIG_FILE) {
    const file = path.resolve(cwd, env.CONFIG_FILE);
    if (!existsSync(file)) throw new ConfigError('CONFIG_FILE', `no file at ${file}`);
    const doc = readYaml(file, 'CONFIG_FILE');
    problems.push(...unknownKeys(doc, defaults, `${env.CONFIG_FILE}: `));
    raw = deepMerge(raw, doc);
  }
  problems.push(...unknownKeys(overrides, defaults, ''));
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
  if (env.LOG_FORMAT !== undefined) set(['log_format'], env.LOG_FORMAT);
  if (env.METRICS_TOKEN !== undefined)
    set(['observability', 'metrics', 'token'], env.METRICS_TOKEN || null);
  if (env.TRACING_EXPORTER !== undefined)
    set(['observability', 'tracing', 'exporter'], env.TRACING_EXPORTER);
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined)
    set(['observability', 'tracing', 'otlp_endpoint'], env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (env.API_KEYS !== undefined) set(['auth', 'api_keys'], parseApiKeys(env.API_KEYS));
  if (env.AGENTS_DIR !== undefined) set(['paths', 'agents_dir'], env.AGENTS_DIR);
  if (env.TOOLS_DIR !== undefined) set(['paths', 'tools_dir'], env.TOOLS_DIR);
  if (env.MCP_DIR !== undefined) set(['paths', 'mcp_dir'], env.MCP_DIR);
  if (env.OPENAI_API_KEY !== undefined) set(['models', 'openai', 'api_key'], env.OPENAI_API_KEY);
  if (env.OPENAI_BASE_URL !== undefined) set(['models', 'openai', 'base_url'], env.OPENAI_BASE_URL);
  if (env.SECRETS_ENCRYPTION_KEY !== undefined)
    set(['secrets', 'encryption_key'], env.SECRETS_ENCRYPTION_KEY || null);
  if (env.INSTANCE_ID !== undefined) set(['cluster', 'instance_id'], env.INSTANCE_ID || null);
  raw = deepMerge(deepMerge(raw, fromEnv), overrides);

  const secrets: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (typeof v === 'string') secrets[k] = v;
  return validate(raw, cwd, secrets, problems);
}

/** Settings of earlier versions that live elsewhere now: a file naming one is told where. */
const MOVED_SETTINGS: Record<string, string> = {
  'limits.max_agents_per_tenant': 'quotas.agents',
  'limits.max_tools_per_tenant': 'quotas.tools',
  'mcp.max_servers_per_tenant': 'quotas.mcp_servers',
  'webhooks.max_per_tenant': 'quotas.webhooks',
  'identities.max_per_tenant': 'quotas.identities',
  'secrets.max_per_tenant': 'quotas.secrets',
};

/**
 * Keys of `doc` that config/default.yaml does not have, with a "did you mean" from their siblings, and
 * sections given as something other than a mapping (dropped from `doc`, so reported once).
 * default.yaml is the schema: every setting has a default there. A mapping given as `{}` there is open
 * (its keys are names, e.g. tenants); lists and leaves are checked by `validate`.
 */
function unknownKeys(doc: Obj, defaults: Obj, where: string, prefix = ''): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const [k, v] of Object.entries(doc)) {
    const key = prefix + k;
    if (!Object.prototype.hasOwnProperty.call(defaults, k)) {
      const moved = MOVED_SETTINGS[key];
      problems.push({
        key: where + key,
        problem: moved ? `moved to ${moved}` : unknownKeyMessage(k, Object.keys(defaults)),
      });
      continue;
    }
    const d = defaults[k];
    if (isObj(d) && Object.keys(d).length > 0 && !isObj(v)) {
      const some = Object.keys(d).slice(0, 3).join(', ');
      problems.push({
        key: where + key,
        problem: `must be a mapping of settings (${some}, …), got ${JSON.stringify(v)}`,
      });
      delete doc[k]; // its settings keep their defaults: one line, not one per setting
      continue;
    }
    if (isObj(d) && isObj(v) && Object.keys(d).length > 0)
      problems.push(...unknownKeys(v, d, where, `${key}.`));
  }
  return problems;
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

/** Decimal digits only: Number() would also take `0x50`, `1e3` and ` 80`. */
function numberFrom(key: string, v: string): number {
  if (!/^\d{1,15}$/.test(v)) throw new ConfigError(key, `"${v}" is not a whole decimal number`);
  return Number(v);
}

/** Checks every setting and reports every problem at once (appended to `problems`). */
function validate(
  raw: Obj,
  cwd: string,
  secrets: Record<string, string>,
  problems: ConfigProblem[],
): AppConfig {
  const fail = (key: string, problem: string) => void problems.push({ key, problem });
  const get = (keyPath: string): unknown =>
    keyPath.split('.').reduce<unknown>((o, k) => (isObj(o) ? o[k] : undefined), raw);
  const int = (key: string, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    const v = get(key);
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      fail(key, `must be a whole number from ${min} to ${max}, got ${JSON.stringify(v)}`);
      return min;
    }
    return v;
  };
  const str = (key: string, nullable = false): string => {
    const v = get(key);
    if (nullable && v == null) return null as unknown as string;
    if (typeof v !== 'string' || v.trim() === '') {
      fail(key, `must be a non-empty string, got ${JSON.stringify(v)}`);
      return '';
    }
    return v;
  };
  /** A folder of declarations; none there is fine (nothing to load), a file there is not. */
  const folder = (key: string): string => {
    const dir = path.resolve(cwd, str(key));
    if (existsSync(dir) && !statSync(dir).isDirectory())
      fail(key, `must be a folder, but ${dir} is a file`);
    return dir;
  };
  /** An IP address or a host name: a URL or a phrase failed only in listen, without the key's name. */
  const listenHost = (v: string): string => {
    if (v !== '' && (!isHostPattern(v) || v.includes('/') || v.startsWith('*')))
      fail(
        'server.host',
        `must be an IP address or a host name such as 0.0.0.0 or localhost (no scheme, no port), got ${JSON.stringify(v)}`,
      );
    return v;
  };
  const httpUrl = (key: string): string => {
    const v = str(key);
    if (v !== '' && (!/^https?:\/\/[^/\s]/.test(v) || !parsesAsUrl(v))) {
      fail(key, `must be an http:// or https:// URL, got ${JSON.stringify(v)}`);
      return '';
    }
    return v;
  };

  const stringList = (key: string): string[] => {
    const v = get(key);
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && x.trim() !== '')) {
      fail(key, `must be a list of non-empty strings, got ${JSON.stringify(v)}`);
      return [];
    }
    return v as string[];
  };

  const list = (key: string): unknown[] => {
    const v = get(key) ?? [];
    if (!Array.isArray(v)) fail(key, 'must be a list');
    return Array.isArray(v) ? v : [];
  };
  const names = (key: string): string[] =>
    list(key).filter((n, i) => {
      const ok = typeof n === 'string' && SECRET_NAME.test(n);
      if (!ok) fail(`${key}[${i}]`, `must be a variable name, got ${JSON.stringify(n)}`);
      return ok;
    }) as string[];
  const hostList = (key: string): string[] =>
    list(key).filter((h, i) => {
      const ok = typeof h === 'string' && isHostPattern(h);
      if (!ok)
        fail(`${key}[${i}]`, `must be a CIDR, an IP or a host name, got ${JSON.stringify(h)}`);
      return ok;
    }) as string[];

  const level = get('log_level');
  if (!['error', 'warn', 'info', 'debug'].includes(level as string)) {
    fail('log_level', `must be one of error, warn, info, debug; got ${JSON.stringify(level)}`);
  }
  const oneOf = <T extends string>(key: string, allowed: readonly T[]): T => {
    const v = get(key);
    if (!allowed.includes(v as T)) {
      fail(key, `must be one of ${allowed.join(', ')}; got ${JSON.stringify(v)}`);
      return allowed[0];
    }
    return v as T;
  };
  const bool = (key: string): boolean => {
    const v = get(key);
    if (typeof v !== 'boolean') fail(key, `must be true or false, got ${JSON.stringify(v)}`);
    return v === true;
  };
  const tracingExporter = oneOf('observability.tracing.exporter', ['none', 'otlp', 'memory']);
  const otlpEndpoint = str('observability.tracing.otlp_endpoint', true);
  if (tracingExporter === 'otlp' && !otlpEndpoint)
    fail('observability.tracing.otlp_endpoint', 'is required when the tracing exporter is otlp');
  const url = str('database.url', true);
  if (url !== null && url !== '' && (!/^postgres(ql)?:\/\//.test(url) || !parsesAsUrl(url))) {
    fail('database.url', 'must be a postgres:// URL, or unset for SQLite');
  }
  const keys = get('auth.api_keys');
  if (!Array.isArray(keys)) fail('auth.api_keys', 'must be a list');
  const apiKeys = (Array.isArray(keys) ? keys : []).flatMap((k: unknown, i) => {
    if (
      !isObj(k) ||
      typeof k.key !== 'string' ||
      !k.key ||
      typeof k.tenant !== 'string' ||
      !k.tenant
    ) {
      fail(`auth.api_keys[${i}]`, 'must be {key, tenant} with non-empty strings');
      return [];
    }
    const extra = Object.keys(k).filter((f) => f !== 'key' && f !== 'tenant');
    if (extra.length)
      fail(`auth.api_keys[${i}].${extra[0]}`, 'unknown field; expected key, tenant');
    return [{ key: k.key, tenant: k.tenant }];
  });
  // a key given twice would reach only its first tenant
  const seenKeys = new Set<string>();
  apiKeys.forEach((k, i) => {
    if (seenKeys.has(k.key)) fail(`auth.api_keys[${i}]`, 'repeats a key given before it');
    seenKeys.add(k.key);
    // its tools and MCP servers would be every tenant's
    if (k.tenant === GLOBAL_TOOL_TENANT)
      fail(
        `auth.api_keys[${i}].tenant`,
        `"${GLOBAL_TOOL_TENANT}" is reserved: it holds the tools and MCP servers of the operator's files, which every tenant sees`,
      );
  });

  const webhookSlots = int('webhooks.max_in_flight', 1, 1000);
  const deliveryTimeout = int('webhooks.request_timeout_seconds', 1, 300);
  const callbackSlots = int('webhooks.callback_max_in_flight', 1, 1000);
  const scanSlots = int('limits.search_scans_in_flight', 1, 1000);
  const config: AppConfig = {
    server: {
      host: listenHost(str('server.host')),
      port: int('server.port', 0, 65535),
      body_limit_bytes: int('server.body_limit_bytes', 1024),
      json_max_depth: int('server.json_max_depth', 2, 10000),
      allowed_origins: list('server.allowed_origins').flatMap((o, i) => {
        const origin = typeof o === 'string' ? asOrigin(o) : null;
        if (origin === null)
          fail(
            `server.allowed_origins[${i}]`,
            `must be a web origin such as https://app.example.com (scheme, host, port; no path, no *), got ${JSON.stringify(o)}`,
          );
        return origin === null ? [] : [origin];
      }),
      allowed_hosts: list('server.allowed_hosts').flatMap((h, i) => {
        const ok = typeof h === 'string' && isHostPattern(h) && !h.includes('/') && isIP(h) === 0;
        if (!ok)
          fail(
            `server.allowed_hosts[${i}]`,
            `must be a host name such as agents.example.com or *.example.com (no port, no scheme; IP addresses are always answered), got ${JSON.stringify(h)}`,
          );
        return ok ? [h.toLowerCase()] : [];
      }),
    },
    database: {
      url,
      sqlite_path: path.resolve(cwd, str('database.sqlite_path')),
      schema: str('database.schema', true),
      sqlite_checkpoint_ms: int('database.sqlite_checkpoint_ms', 0, 60_000),
      sqlite_cache_mib: int('database.sqlite_cache_mib', 1, 65_536),
      record_cache_bytes: int('database.record_cache_bytes', 1024, 1_000_000_000_000),
    },
    log_level: level as LogLevel,
    log_format: oneOf('log_format', ['auto', 'json', 'pretty']),
    observability: {
      metrics: {
        enabled: bool('observability.metrics.enabled'),
        token: str('observability.metrics.token', true),
      },
      tracing: {
        exporter: tracingExporter,
        otlp_endpoint: otlpEndpoint,
        service_name: str('observability.tracing.service_name'),
      },
      labels: {
        max_models: int('observability.labels.max_models', 1, 1_000_000),
        max_tools: int('observability.labels.max_tools', 1, 1_000_000),
        max_chars: int('observability.labels.max_chars', 8, 10_000),
      },
    },
    auth: { api_keys: apiKeys },
    paths: {
      agents_dir: folder('paths.agents_dir'),
      tools_dir: folder('paths.tools_dir'),
      mcp_dir: folder('paths.mcp_dir'),
    },
    mcp: {
      max_tools_per_server: int('mcp.max_tools_per_server', 1, 10000),
      max_tool_schema_bytes: int('mcp.max_tool_schema_bytes', 256, 10_000_000),
      max_description_chars: int('mcp.max_description_chars', 16, 1_000_000),
      max_result_bytes: int('mcp.max_result_bytes', 1024, 100_000_000),
      max_message_bytes: int('mcp.max_message_bytes', 4096, 1_000_000_000),
      max_args: int('mcp.max_args', 0, 10000),
      max_entries: int('mcp.max_entries', 0, 10000),
      max_string_chars: int('mcp.max_string_chars', 64, 1_000_000),
      connect_timeout_seconds: int('mcp.connect_timeout_seconds', 1, 3600),
      idle_seconds: int('mcp.idle_seconds', 1, 86400),
      max_running_stdio: int('mcp.max_running_stdio', 1, 1000),
      restart_backoff_max_seconds: int('mcp.restart_backoff_max_seconds', 1, 86400),
      stdio: { allowed_commands: stringList('mcp.stdio.allowed_commands') },
    },
    tool_executor: {
      tool_timeout_seconds: int('tool_executor.tool_timeout_seconds', 1, DAY_SECONDS),
      consent_timeout_seconds: int('tool_executor.consent_timeout_seconds', 1),
      dedupe_window_seconds: int('tool_executor.dedupe_window_seconds', 0),
      prune_interval_seconds: int('tool_executor.prune_interval_seconds', 1, DAY_SECONDS),
      batch_state_ttl_seconds: int('tool_executor.batch_state_ttl_seconds', 1),
      cache_max_entries: int('tool_executor.cache_max_entries', 10),
      cache_max_bytes: int('tool_executor.cache_max_bytes', 1024, 1_000_000_000_000),
    },
    processing: {
      default_max_steps: int('processing.default_max_steps', 1, 10000),
      max_tokens_per_batch: int('processing.max_tokens_per_batch', 0),
      max_batch_seconds: int('processing.max_batch_seconds', 1, DAY_SECONDS),
      max_reminders: int('processing.max_reminders', 0, 100),
      shutdown_grace_seconds: int('processing.shutdown_grace_seconds', 0, 3600),
      max_client_tools: int('processing.max_client_tools', 0, 1000),
      max_client_tool_bytes: int('processing.max_client_tool_bytes', 256, 1048576),
      compaction_max_messages: int('processing.compaction_max_messages', 1, 2000),
      compaction_timeout_seconds: int('processing.compaction_timeout_seconds', 1, 3600),
      compaction_max_summary_chars: int('processing.compaction_max_summary_chars', 100, 1_000_000),
      max_images_per_message: int('processing.max_images_per_message', 0, 100),
      max_image_bytes: int('processing.max_image_bytes', 1024, 100_000_000),
      max_queued_runs: int('processing.max_queued_runs', 1, 100_000),
      context_cache_windows: int('processing.context_cache_windows', 1, 1_000_000),
      context_cache_tokens: int('processing.context_cache_tokens', 1000, 10_000_000_000),
      max_fork_depth: int('processing.max_fork_depth', 1, 1000),
    },
    models: {
      openai: {
        api_key: str('models.openai.api_key', true),
        base_url: httpUrl('models.openai.base_url'),
        timeout_seconds: int('models.openai.timeout_seconds', 1, 3600),
        max_retries: int('models.openai.max_retries', 0, 10),
        vision_models: list('models.openai.vision_models').length
          ? stringList('models.openai.vision_models')
          : [],
        requests_per_minute: int('models.openai.requests_per_minute', 0, REQUESTS_PER_MINUTE_MAX),
      },
      providers: modelProviders(get('models.providers'), secrets),
      max_response_bytes: int('models.max_response_bytes', 1024),
      max_error_body_bytes: int('models.max_error_body_bytes', 1024, 16 * 1024 * 1024),
      max_tool_call_index: int('models.max_tool_call_index', 0, 1_000_000),
      max_retry_after_seconds: int('models.max_retry_after_seconds', 0, 3600),
      max_usage_tokens: int('models.max_usage_tokens', 1_000_000),
      max_context_retries: int('models.max_context_retries', 0, 10),
      embeddings: embeddingSettings(
        get('models.embeddings.providers'),
        str('models.embeddings.default_model', true),
        int('models.embeddings.max_scan_passages', 1, 1_000_000),
        secrets,
      ),
    },
    webhooks: {
      url_max_length: int('webhooks.url_max_length', 16, 8192),
      secret_min_length: int('webhooks.secret_min_length', 8, 256),
      secret_max_length: int('webhooks.secret_max_length', 8, 300),
      max_attempts: int('webhooks.max_attempts', 1, 50),
      retry_base_seconds: int('webhooks.retry_base_seconds', 0, 3600),
      retry_max_seconds: int('webhooks.retry_max_seconds', 0, 86400),
      request_timeout_seconds: deliveryTimeout,
      poll_interval_seconds: int('webhooks.poll_interval_seconds', 1, 3600),
      // a claim that ends while its attempt may still be waiting for the target lets another instance
      // send the same delivery again meanwhile
      claim_seconds: int('webhooks.claim_seconds', deliveryTimeout + 1, 3600),
      max_in_flight: webhookSlots,
      // a tenant's share is at most the whole
      max_in_flight_per_tenant: int('webhooks.max_in_flight_per_tenant', 1, webhookSlots),
      callback_max_in_flight: callbackSlots,
      callback_max_in_flight_per_tenant: int(
        'webhooks.callback_max_in_flight_per_tenant',
        1,
        callbackSlots,
      ),
      callback_max_waiting_per_tenant: int('webhooks.callback_max_waiting_per_tenant', 0, 100_000),
      retention_days: int('webhooks.retention_days', 1, 3650),
      public_url: publicUrl(str('webhooks.public_url', true)),
    },
    agents: { default_agent_type: oneOf('agents.default_agent_type', AGENT_TYPES) },
    agent_files: {
      max_bytes: int('agent_files.max_bytes', 1024, 1_000_000_000),
      max_messages: int('agent_files.max_messages', 0, 100_000),
      max_agents: int('agent_files.max_agents', 1, 1000),
    },
    rate_limit: {
      requests_per_second: int('rate_limit.requests_per_second', 0),
      burst: int('rate_limit.burst', 1),
    },
    websocket: {
      max_connections_per_key: int('websocket.max_connections_per_key', 1),
      max_subscriptions_per_connection: int('websocket.max_subscriptions_per_connection', 1),
      max_frames_per_second: int('websocket.max_frames_per_second', 1),
      max_buffered_bytes: int('websocket.max_buffered_bytes', 1024, 1024 * 1024 * 1024),
    },
    streaming: {
      max_streams_per_key: int('streaming.max_streams_per_key', 1, 100_000),
      max_buffered_bytes: int('streaming.max_buffered_bytes', 1024, 1024 * 1024 * 1024),
    },
    consent: {
      max_pending_per_agent: int('consent.max_pending_per_agent', 1),
      max_active_grants_per_agent: int('consent.max_active_grants_per_agent', 1, 100_000),
      grant_retention_days: int('consent.grant_retention_days', 1, 3650),
    },
    limits: {
      max_duration_seconds: int('limits.max_duration_seconds', 1),
      max_tags_per_agent: int('limits.max_tags_per_agent', 1, 10_000),
      max_tools_per_agent: int('limits.max_tools_per_agent', 10, 10_000), // the base tools fit
      max_rules_per_agent: int('limits.max_rules_per_agent', 1, 10_000),
      max_memory_blocks_per_agent: int('limits.max_memory_blocks_per_agent', 1, 10_000),
      max_block_chars: int('limits.max_block_chars', 1),
      // each value is an SQL variable: SQLite allows 32766 in one statement
      max_filter_values: int('limits.max_filter_values', 1, 10_000),
      max_passage_chars: int('limits.max_passage_chars', 1, 10_000_000),
      max_tags_per_passage: int('limits.max_tags_per_passage', 1, 1_000),
      max_passages_per_request: int('limits.max_passages_per_request', 1, 10_000),
      max_search_results: int('limits.max_search_results', 1, 10_000),
      max_page_size: int('limits.max_page_size', 1, 10_000),
      // a page is one JSON string: V8's longest is 512 MiB, and escapes can make the JSON longer than the estimate
      max_page_bytes: int('limits.max_page_bytes', 1024, 128 * 1024 * 1024),
      max_conversations_per_agent: int('limits.max_conversations_per_agent', 1, 10_000_000),
      max_tool_description_chars: int('limits.max_tool_description_chars', 16, 1_000_000),
      max_tool_parameters_bytes: int('limits.max_tool_parameters_bytes', 256, 10_000_000),
      max_tool_headers: int('limits.max_tool_headers', 1, 1000),
      max_tool_header_value_chars: int('limits.max_tool_header_value_chars', 16, 1_000_000),
      max_tool_calls_per_step: int('limits.max_tool_calls_per_step', 1, 10_000),
      max_initial_messages: int('limits.max_initial_messages', 0, 10_000),
      max_schema_expansion: int('limits.max_schema_expansion', 10, 10_000_000),
      search_scan_rows: int('limits.search_scan_rows', 1, 10_000_000),
      search_scan_chars: int('limits.search_scan_chars', 1, 100_000_000),
      search_scans_in_flight: scanSlots,
      // a tenant's share is at most the whole
      search_scans_in_flight_per_tenant: int(
        'limits.search_scans_in_flight_per_tenant',
        1,
        scanSlots,
      ),
      search_scans_waiting_per_tenant: int('limits.search_scans_waiting_per_tenant', 0, 100_000),
    },
    quotas: quotaSettings(
      Object.fromEntries(
        QUOTA_NAMES.map((n) => [n, int(`quotas.${n}`, QUOTA_MIN[n], QUOTA_MAX[n])]),
      ),
      get('quotas.tenants'),
      fail,
    ),
    cluster: clusterSettings(str('cluster.instance_id', true), int, fail),
    secrets: {
      encryption_key: encryptionKey(str('secrets.encryption_key', true), fail),
      generate_key_file: bool('secrets.generate_key_file'),
      max_value_bytes: int('secrets.max_value_bytes', 1, 1_048_576),
      config: configSecrets(get('secrets.config'), secrets, fail),
    },
    identities: {
      max_per_agent: int('identities.max_per_agent', 1, 1000),
      max_properties: int('identities.max_properties', 0, 10_000),
      max_properties_bytes: int('identities.max_properties_bytes', 2, 1_048_576),
      max_agents_per_request: int('identities.max_agents_per_request', 1, 10_000),
    },
    tools: {
      http: {
        env_allowlist: names('tools.http.env_allowlist'),
        max_response_bytes: int('tools.http.max_response_bytes', 1024),
        allowed_hosts: hostList('tools.http.allowed_hosts'),
        denied_hosts: hostList('tools.http.denied_hosts'),
        max_redirects: int('tools.http.max_redirects', 0, 20),
      },
    },
    secrets_env: {},
  };
  for (const name of config.tools.http.env_allowlist)
    if (secrets[name] !== undefined) config.secrets_env[name] = secrets[name];
  if (config.webhooks.secret_min_length > config.webhooks.secret_max_length)
    fail('webhooks.secret_min_length', 'must not be above webhooks.secret_max_length');
  if (problems.length > 0) throw ConfigError.of(problems);
  return config;
}

/** A URL, with its escapes whole (a driver decodes the user and password: `%zz` fails there). */
function parsesAsUrl(v: string): boolean {
  try {
    new URL(v);
    decodeURIComponent(v);
    return true;
  } catch {
    return false;
  }
}

/** An `http(s)://host[:port]` origin as `server.allowed_origins` holds it, or null when it is not one. */
export function asOrigin(v: string): string | null {
  try {
    const url = new URL(v);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    return v.replace(/\/$/, '').toLowerCase() === url.origin ? url.origin : null;
  } catch {
    return null;
  }
}

function publicUrl(v: string | null): string | null {
  if (v === null) return null;
  if (!/^https?:\/\/[^\s]+$/.test(v))
    throw new ConfigError('webhooks.public_url', 'must be an http:// or https:// URL, or unset');
  return v.replace(/\/+$/, '');
}

/** A quota's least value: none stored may be the bound, but a tenant whose runs may never start is not. */
const QUOTA_MIN: Record<QuotaName, number> = {
  ...(Object.fromEntries(QUOTA_NAMES.map((n) => [n, 0])) as Quotas),
  running_runs: 1,
};
const QUOTA_MAX: Record<QuotaName, number> = {
  ...(Object.fromEntries(QUOTA_NAMES.map((n) => [n, 1_000_000_000])) as Quotas),
  stored_bytes: 2 ** 50, // 1 PiB: far past any disk, well within a safe integer
};

/** `quotas.tenants.<tenant>`: some quotas of one tenant (tenant names may hold dots: read here, not by path). */
function quotaSettings(
  defaults: Record<string, number>,
  raw: unknown,
  fail: (key: string, problem: string) => void,
): QuotaSettings {
  const tenants: QuotaSettings['tenants'] = {};
  if (!isObj(raw)) {
    fail('quotas.tenants', 'must be a mapping of tenant → quotas, e.g. {team-a: {agents: 100}}');
    return { defaults: defaults as Quotas, tenants };
  }
  for (const [tenant, given] of Object.entries(raw)) {
    const at = `quotas.tenants.${tenant}`;
    if (!isObj(given)) {
      fail(at, `must be a mapping of quotas (${QUOTA_NAMES.slice(0, 3).join(', ')}, …)`);
      continue;
    }
    const own: Partial<Quotas> = {};
    for (const [name, v] of Object.entries(given)) {
      if (!(QUOTA_NAMES as readonly string[]).includes(name)) {
        fail(`${at}.${name}`, unknownKeyMessage(name, QUOTA_NAMES));
        continue;
      }
      const min = QUOTA_MIN[name as QuotaName];
      const max = QUOTA_MAX[name as QuotaName];
      if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
        fail(
          `${at}.${name}`,
          `must be a whole number from ${min} to ${max}, got ${JSON.stringify(v)}`,
        );
      else own[name as QuotaName] = v;
    }
    tenants[tenant] = own;
  }
  return { defaults: defaults as Quotas, tenants };
}

function clusterSettings(
  instanceId: string | null,
  int: (key: string, min: number, max?: number) => number,
  fail: (key: string, problem: string) => void,
): ClusterSettings {
  const id = instanceId ?? `${hostname()}-${process.pid}`;
  if (!/^[A-Za-z0-9._:-]{1,100}$/.test(id))
    fail('cluster.instance_id', 'must be 1-100 of A-Z a-z 0-9 . _ : -');
  const lease = int('cluster.lease_duration_ms', 1000, 3_600_000);
  const renew = int('cluster.lease_renew_interval_ms', 100, 600_000);
  // two renewals must fit in a lease, or one slow renewal loses it
  if (renew * 2 > lease)
    fail('cluster.lease_renew_interval_ms', 'must be at most half of lease_duration_ms');
  return { instance_id: id, lease_duration_ms: lease, lease_renew_interval_ms: renew };
}

const PROVIDER_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/i;
const RESERVED_PROVIDERS = ['openai', 'scripted'];
const PROVIDER_FIELDS = [
  'name',
  'type',
  'base_url',
  'api_key',
  'api_key_env',
  'api_key_secret',
  'models',
  'context_window',
  'timeout_seconds',
  'max_retries',
  'vision_models',
  'requests_per_minute',
];
const REQUESTS_PER_MINUTE_MAX = 100_000_000;

/** `models.providers`: each entry names its key once (literal, environment variable or tenant secret). */
function modelProviders(raw: unknown, env: Record<string, string>): ModelProviderConfig[] {
  if (raw == null) return [];
  if (!Array.isArray(raw)) throw new ConfigError('models.providers', 'must be a list');
  const names = new Set<string>();
  return raw.map((p: unknown, i) => {
    const at = `models.providers[${i}]`;
    if (!isObj(p)) throw new ConfigError(at, 'must be {name, type, base_url, ...}');
    for (const k of Object.keys(p))
      if (!PROVIDER_FIELDS.includes(k))
        throw new ConfigError(
          `${at}.${k}`,
          `unknown field; expected ${PROVIDER_FIELDS.join(', ')}`,
        );
    const { name, type = 'openai', base_url } = p;
    if (typeof name !== 'string' || !PROVIDER_NAME.test(name))
      throw new ConfigError(`${at}.name`, 'must be letters, digits, _ . or -, at most 64');
    if (RESERVED_PROVIDERS.includes(name) || names.has(name))
      throw new ConfigError(`${at}.name`, `"${name}" is already a provider`);
    names.add(name);
    if (type !== 'openai') throw new ConfigError(`${at}.type`, 'must be "openai"');
    if (typeof base_url !== 'string' || !/^https?:\/\/[^/]/.test(base_url))
      throw new ConfigError(`${at}.base_url`, 'must be an http:// or https:// URL');
    const optStr = (k: string): string | null => {
      const v = p[k];
      if (v == null) return null;
      if (typeof v !== 'string' || v === '')
        throw new ConfigError(`${at}.${k}`, 'must be a non-empty string');
      return v;
    };
    const given = ['api_key', 'api_key_env', 'api_key_secret'].filter((k) => optStr(k) !== null);
    if (given.length > 1)
      throw new ConfigError(
        at,
        `give one of api_key, api_key_env, api_key_secret, not ${given.join(' and ')}`,
      );
    const keyEnv = optStr('api_key_env');
    const keyFromTenant = optStr('api_key_secret') !== null;
    if (keyEnv !== null && env[keyEnv] === undefined)
      throw new ConfigError(`${at}.api_key_env`, `environment variable ${keyEnv} is not set`);
    const modelNames = (k: string): string[] => {
      const v = p[k] ?? [];
      if (!Array.isArray(v) || v.some((m) => typeof m !== 'string' || m === ''))
        throw new ConfigError(`${at}.${k}`, 'must be a list of model names');
      return v as string[];
    };
    const models = modelNames('models');
    const num = (k: string, def: number, min: number, max: number): number => {
      const v = p[k] ?? def;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
        throw new ConfigError(`${at}.${k}`, `must be a whole number from ${min} to ${max}`);
      return v;
    };
    return {
      name,
      type,
      base_url,
      api_key: keyEnv !== null ? env[keyEnv] : optStr('api_key'),
      api_key_secret: optStr('api_key_secret'),
      models,
      vision_models: modelNames('vision_models'),
      context_window: num('context_window', 128_000, 256, 10_000_000),
      timeout_seconds: num('timeout_seconds', 60, 1, 3600),
      max_retries: num('max_retries', 3, 0, 10),
      requests_per_minute: providerRate(at, num, keyFromTenant),
    };
  });
}

/**
 * A provider's `requests_per_minute` bounds the operator's key. One keyed by each tenant's own secret has
 * each tenant's limit, which the operator does not know and no tenant shares: a bound there is refused.
 */
function providerRate(
  at: string,
  num: (k: string, def: number, min: number, max: number) => number,
  keyFromTenant: boolean,
): number {
  const rate = num('requests_per_minute', 0, 0, REQUESTS_PER_MINUTE_MAX);
  if (rate > 0 && keyFromTenant)
    throw new ConfigError(
      `${at}.requests_per_minute`,
      "bounds the operator's key; this provider is keyed by each tenant's api_key_secret, whose own limit applies",
    );
  return rate;
}

const EMBEDDING_PROVIDER_FIELDS = [
  'name',
  'type',
  'base_url',
  'api_key',
  'api_key_env',
  'models',
  'batch_size',
  'timeout_seconds',
  'max_retries',
  'max_input_chars',
  'chunk_size',
];

/** `models.embeddings`: providers (each model with its dimensions) and the default handle, which must exist. */
function embeddingSettings(
  raw: unknown,
  defaultModel: string | null,
  maxScan: number,
  env: Record<string, string>,
): EmbeddingSettings {
  const key = 'models.embeddings.providers';
  if (raw != null && !Array.isArray(raw)) throw new ConfigError(key, 'must be a list');
  const names = new Set<string>();
  const providers = ((raw as unknown[] | null) ?? []).map(
    (p: unknown, i): EmbeddingProviderConfig => {
      const at = `${key}[${i}]`;
      if (!isObj(p)) throw new ConfigError(at, 'must be {name, type, models, ...}');
      for (const k of Object.keys(p))
        if (!EMBEDDING_PROVIDER_FIELDS.includes(k))
          throw new ConfigError(
            `${at}.${k}`,
            `unknown field; expected ${EMBEDDING_PROVIDER_FIELDS.join(', ')}`,
          );
      const { name, type = 'openai', base_url } = p;
      if (typeof name !== 'string' || !PROVIDER_NAME.test(name))
        throw new ConfigError(`${at}.name`, 'must be letters, digits, _ . or -, at most 64');
      if (names.has(name))
        throw new ConfigError(`${at}.name`, `"${name}" is already an embedding provider`);
      names.add(name);
      if (type !== 'openai' && type !== 'hashed')
        throw new ConfigError(`${at}.type`, 'must be "openai" or "hashed"');
      if (type === 'openai' && (typeof base_url !== 'string' || !/^https?:\/\/[^/]/.test(base_url)))
        throw new ConfigError(`${at}.base_url`, 'must be an http:// or https:// URL');
      if (type === 'hashed' && (base_url != null || p.api_key != null || p.api_key_env != null))
        throw new ConfigError(
          at,
          'a hashed provider is offline: no base_url, api_key or api_key_env',
        );
      const optStr = (k: string): string | null => {
        const v = p[k];
        if (v == null) return null;
        if (typeof v !== 'string' || v === '')
          throw new ConfigError(`${at}.${k}`, 'must be a non-empty string');
        return v;
      };
      if (optStr('api_key') !== null && optStr('api_key_env') !== null)
        throw new ConfigError(at, 'give one of api_key, api_key_env, not both');
      const keyEnv = optStr('api_key_env');
      if (keyEnv !== null && env[keyEnv] === undefined)
        throw new ConfigError(`${at}.api_key_env`, `environment variable ${keyEnv} is not set`);
      const num = (k: string, def: number, min: number, max: number, v: unknown = p[k]): number => {
        const n = v ?? def;
        if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max)
          throw new ConfigError(`${at}.${k}`, `must be a whole number from ${min} to ${max}`);
        return n;
      };
      if (!Array.isArray(p.models) || p.models.length === 0)
        throw new ConfigError(`${at}.models`, 'must be a non-empty list of {name, dimensions}');
      const models = (p.models as unknown[]).map((m, j) => {
        const mAt = `${at}.models[${j}]`;
        if (!isObj(m) || typeof m.name !== 'string' || m.name === '' || m.name.length > 200)
          throw new ConfigError(mAt, 'must be {name, dimensions} with a name of 1-200 characters');
        for (const k of Object.keys(m))
          if (k !== 'name' && k !== 'dimensions')
            throw new ConfigError(`${mAt}.${k}`, 'unknown field; expected name, dimensions');
        return {
          name: m.name,
          dimensions: num(`models[${j}].dimensions`, 0, 1, 16_384, m.dimensions),
        };
      });
      return {
        name,
        type,
        base_url: type === 'openai' ? (base_url as string) : null,
        api_key: keyEnv !== null ? env[keyEnv] : optStr('api_key'),
        models,
        batch_size: num('batch_size', 64, 1, 2048),
        timeout_seconds: num('timeout_seconds', 30, 1, 3600),
        max_retries: num('max_retries', 2, 0, 10),
        max_input_chars: num('max_input_chars', 8000, 1, 1_000_000),
        chunk_size: num('chunk_size', 300, 1, 1_000_000),
      };
    },
  );
  if (defaultModel !== null) {
    const handles = providers.flatMap((p) => p.models.map((m) => `${p.name}/${m.name}`));
    if (!handles.includes(defaultModel))
      throw new ConfigError(
        'models.embeddings.default_model',
        `"${defaultModel}" is not a configured embedding model; configured: ${handles.join(', ') || 'none'}`,
      );
  }
  return { providers, default_model: defaultModel, max_scan_passages: maxScan };
}

/** 32 bytes, given as base64 (44 characters) or hex (64). */
function encryptionKey(
  v: string | null,
  fail: (key: string, problem: string) => void,
): Buffer | null {
  if (v === null || v === '') return null;
  const key = /^[0-9a-f]{64}$/i.test(v) ? Buffer.from(v, 'hex') : Buffer.from(v, 'base64');
  if (key.length !== 32) {
    fail(
      'secrets.encryption_key',
      'must be 32 bytes, as base64 (openssl rand -base64 32) or 64 hex digits',
    );
    return null;
  }
  return key;
}

/** `secrets.config`: `[{tenant, name, value | value_env}]`. */
function configSecrets(
  raw: unknown,
  env: Record<string, string>,
  fail: (key: string, problem: string) => void,
): SecretsSettings['config'] {
  if (raw == null) return [];
  if (!Array.isArray(raw)) {
    fail('secrets.config', 'must be a list of {tenant, name, value | value_env}');
    return [];
  }
  return raw.flatMap((e: unknown, i) => {
    const at = `secrets.config[${i}]`;
    if (!isObj(e) || typeof e.tenant !== 'string' || !e.tenant || typeof e.name !== 'string') {
      fail(at, 'must be {tenant, name, value | value_env}');
      return [];
    }
    if (!SECRET_NAME.test(e.name)) {
      fail(`${at}.name`, 'must be letters, digits and _, not starting with a digit');
      return [];
    }
    const value =
      typeof e.value_env === 'string'
        ? env[e.value_env]
        : typeof e.value === 'string'
          ? e.value
          : undefined;
    if (value === undefined || value === '') {
      fail(
        at,
        typeof e.value_env === 'string'
          ? `environment variable ${e.value_env} is not set`
          : 'needs a value or value_env',
      );
      return [];
    }
    return [{ tenant: e.tenant, name: e.name, value }];
  });
}
