import { INestApplication } from '@nestjs/common';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createApp } from '../../src/bootstrap';
import { AppConfig, loadConfig } from '../../src/config/app-config';
import { watchResponses } from './response-contract';
import { ServerProcess, startServer } from './server-process';

export interface TestApp {
  app: INestApplication;
  config: AppConfig;
  /** http://127.0.0.1:PORT (no /v1: the Letta SDK adds it). */
  baseUrl: string;
  dir: string;
  close(): Promise<void>;
}

/** The e2e suites run against PostgreSQL too when TEST_DATABASE_URL is set (.ci/run does that). */
const PG_URL = process.env.TEST_DATABASE_URL;

export interface StartOptions {
  /** Config overrides, deep-merged over config/default.yaml (e.g. `{auth: {api_keys: [...]}}`). */
  overrides?: Record<string, unknown>;
  /** Extra environment (e.g. secrets for `${ENV}` headers). */
  env?: Record<string, string>;
  /** Reuse a folder (and its SQLite file) from an earlier start: a restart. */
  dir?: string;
  /** Keep the folder on close, for a restart test. */
  keepDir?: boolean;
  /**
   * The `openai` provider's base URL (a fake model server's `baseUrl`): agents may name only configured
   * endpoints in `llm_config.model_endpoint`.
   */
  modelBaseUrl?: string;
  /**
   * Check accepted request bodies against the document (default true). The fuzz suite turns it off: its
   * random bodies probe for 5xx, and lenient validators accept junk that no client is meant to send.
   */
  checkRequestBodies?: boolean;
  /**
   * Check traffic against the OpenAPI document at all (default true). The benchmarks turn it off: the
   * checks are the harness's work, not the server's, and cost about a tenth of its CPU per request.
   */
  checkContract?: boolean;
}

/** `models` overrides with the `openai` provider's base URL set (other model settings kept). */
function withModelBaseUrl(models: unknown, baseUrl: string): Record<string, unknown> {
  const m = (models ?? {}) as Record<string, Record<string, unknown> | undefined>;
  return { ...m, openai: { ...m.openai, base_url: baseUrl } };
}

/** One PostgreSQL schema per test folder, so a restart (same folder) sees the same tables. */
async function pgSchemaFor(dir: string): Promise<string> {
  const schema =
    't_' +
    path
      .basename(dir)
      .replace(/[^a-z0-9]/gi, '_')
      .toLowerCase();
  const { Client } = await import('pg');
  const client = new Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  } finally {
    await client.end();
  }
  return schema;
}

/** The environment and config overrides of an app on `dir`: its SQLite file, or its PostgreSQL schema. */
async function setupIn(
  dir: string,
  opts: StartOptions,
): Promise<{ env: Record<string, string>; overrides: Record<string, unknown> }> {
  const env: Record<string, string> = {
    SQLITE_PATH: path.join(dir, 'db.sqlite'),
    AGENTS_DIR: path.join(dir, 'agents'),
    TOOLS_DIR: path.join(dir, 'tools'),
    MCP_DIR: path.join(dir, 'mcp'),
    LOG_LEVEL: 'error',
    // a fixed test key, so suites can store tenant secrets (PUT /v1/secrets/{name})
    SECRETS_ENCRYPTION_KEY: 'dGVzdC1rZXktZm9yLXRlbmFudC1zZWNyZXRzLTMyYiE=',
    ...(PG_URL ? { DATABASE_URL: PG_URL } : {}),
    ...opts.env,
  };
  const schema = PG_URL ? await pgSchemaFor(dir) : null;
  const overrides = {
    database: { schema },
    // suites drive the API faster than any sane per-key rate; the rate-limit suite sets its own
    rate_limit: { requests_per_second: 0, burst: 1 },
    ...opts.overrides,
    ...(opts.modelBaseUrl
      ? { models: withModelBaseUrl(opts.overrides?.models, opts.modelBaseUrl) }
      : {}),
  };
  return { env, overrides };
}

/**
 * Boots the real app on port 0 with a fresh SQLite file in a temp folder (or PostgreSQL, see above),
 * empty agent and tool folders unless overridden, and the log quiet.
 */
export async function startApp(opts: StartOptions = {}): Promise<TestApp> {
  const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), 'agent-server-test-'));
  const { env, overrides } = await setupIn(dir, opts);
  const config = loadConfig(env, { server: { port: 0, host: '127.0.0.1' }, ...overrides });
  const app = await createApp(config);
  const contract =
    opts.checkContract === false
      ? null
      : watchResponses(app, { requests: opts.checkRequestBodies ?? true });
  try {
    await app.listen(0, '127.0.0.1');
  } catch (e) {
    // A boot that fails (e.g. a broken agent file) must not leave the database pool and timers behind.
    await app.close().catch(() => undefined);
    if (!opts.keepDir && !opts.dir) rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const address = app.getHttpServer().address() as { port: number };
  const baseUrl = `http://127.0.0.1:${address.port}`;
  return {
    app,
    config,
    baseUrl,
    dir,
    close: async () => {
      await app.close();
      if (!opts.keepDir && !opts.dir) rmSync(dir, { recursive: true, force: true });
      const problems = contract?.problems() ?? [];
      if (problems.length > 0)
        throw new Error(
          `requests or responses that do not match /openapi.json:\n${problems.join('\n')}`,
        );
    },
  };
}

/**
 * The app as a server process of its own on `dir`'s database (what `startApp({dir})` opens), for a test
 * that kills it (kill -9) and then restarts the app on what it left. Give both the same
 * `cluster.instance_id` on PostgreSQL: a restart takes its own agents back at once.
 */
export async function startAppProcess(
  dir: string,
  opts: Pick<StartOptions, 'overrides' | 'env' | 'modelBaseUrl'> = {},
): Promise<ServerProcess & { url: string }> {
  const { env, overrides } = await setupIn(dir, opts);
  const configFile = path.join(dir, 'process-config.json');
  writeFileSync(configFile, JSON.stringify(overrides));
  // (it says where it listens at level info)
  return startServer({ env: { ...env, LOG_LEVEL: 'info', ...opts.env, CONFIG_FILE: configFile } });
}
