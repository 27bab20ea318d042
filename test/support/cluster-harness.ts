/**
 * Several real server processes on one fresh PostgreSQL database, for the scale-out suite and
 * `npm run bench:cluster`. Each instance is `node src/main.ts` (ts-node), or the compiled
 * `dist/src/main.js` when CLUSTER_USE_DIST=1 (after `npm run build`: boots faster).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { FROM_SOURCE, ROOT, spawnServer } from './server-process';

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Null when PostgreSQL answers; else why the cluster suite cannot run. */
export async function pgUnavailable(): Promise<string | null> {
  const url = new URL(ADMIN_URL);
  const port = Number(url.port || 5432);
  const ok = await new Promise<boolean>((resolve) => {
    const s = new Socket();
    s.setTimeout(1000);
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('timeout', () => (s.destroy(), resolve(false)));
    s.once('error', () => resolve(false));
    s.connect(port, url.hostname);
  });
  return ok ? null : `no PostgreSQL answers on ${url.hostname}:${port}`;
}

/** A fresh database for one run; drop() removes it. */
export async function freshDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const { Client } = await import('pg');
  const name = `cluster_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new Client({ connectionString: ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export interface Instance {
  id: string;
  url: string;
  /** Everything the process printed so far. */
  output(): string;
  kill(signal: NodeJS.Signals): Promise<number | null>;
  /** SIGSTOP / SIGCONT: an instance that stalls (a long pause, a partition) and comes back. */
  pause(): void;
  resume(): void;
}

export interface InstanceOptions {
  id: string;
  databaseUrl: string;
  /** Config merged over the defaults (written to a CONFIG_FILE). */
  config?: Record<string, unknown>;
  env?: Record<string, string>;
}

/** Starts one server process; resolves when it listens. */
export async function startInstance(o: InstanceOptions): Promise<Instance> {
  const dir = mkdtempSync(path.join(tmpdir(), `cluster-${o.id}-`));
  const configFile = path.join(dir, 'config.json');
  writeFileSync(configFile, JSON.stringify(o.config ?? {}));
  const useDist = process.env.CLUSTER_USE_DIST === '1';
  const server = spawnServer({
    args: useDist ? [path.join(ROOT, 'dist', 'src', 'main.js')] : FROM_SOURCE,
    env: {
      DATABASE_URL: o.databaseUrl,
      INSTANCE_ID: o.id,
      CONFIG_FILE: configFile,
      AGENTS_DIR: path.join(dir, 'agents'),
      TOOLS_DIR: path.join(dir, 'tools'),
      LOG_LEVEL: 'info',
      ...o.env,
    },
  });
  const url = await server.listening.catch((e: Error) => {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${o.id}: ${e.message}`);
  });
  return {
    id: o.id,
    url,
    output: () => server.output(),
    pause: () => process.kill(-server.pid, 'SIGSTOP'),
    resume: () => process.kill(-server.pid, 'SIGCONT'),
    async kill(signal) {
      const code = await server.kill(signal);
      rmSync(dir, { recursive: true, force: true });
      return code;
    },
  };
}
