/**
 * The real server in its own process, for suites that need a process boundary (logs, signals, kill -9,
 * a second process on one file, several instances). One place spawns it, waits for "listening on", keeps
 * its output and ends it: the child leads its own process group (`detached`), and every end signals the
 * whole group, so nothing it started outlives the suite.
 */
import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import * as path from 'node:path';

export const ROOT = path.join(__dirname, '..', '..');
/** `node` arguments that run the server from source. */
export const FROM_SOURCE = ['-r', 'ts-node/register/transpile-only', 'src/main.ts'];

export interface ServerProcessOptions {
  /** Added to a minimal environment (PATH, PORT=0, NO_COLOR): nothing else of the test's leaks in. */
  env: Record<string, string>;
  /** `node` arguments; the source (ts-node) by default. */
  args?: string[];
}

export interface ServerProcess {
  readonly pid: number;
  stdout(): string;
  stderr(): string;
  /** stdout and stderr, each as printed (not interleaved). */
  output(): string;
  /** Whether it still runs (its output not closed yet). */
  alive(): boolean;
  /** The base URL once it logs "listening on"; rejects if it exits first. */
  readonly listening: Promise<string>;
  /** Its exit code (null after a signal), once its output is closed. */
  readonly exited: Promise<number | null>;
  /** Signals the process group and resolves with the exit code (at once when it has already exited). */
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

const running = new Set<number>();
// a suite that fails before its teardown still takes its servers down with it
process.once('exit', () => running.forEach((pid) => signalGroup(pid, 'SIGKILL')));

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone already
  }
}

/** Spawns the server; `listening` says when it serves. */
export function spawnServer(o: ServerProcessOptions): ServerProcess {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, o.args ?? FROM_SOURCE, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: '0', NO_COLOR: '1', ...o.env },
    detached: true,
  });
  const pid = child.pid!;
  running.add(pid);
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      running.delete(pid);
      resolve(code);
    }),
  );
  const listening = new Promise<string>((resolve, reject) => {
    const look = () => {
      // eslint-disable-next-line no-control-regex
      const m = /listening on (http:\/\/[^\s\x1b"]+)/.exec(out);
      if (m) {
        child.stdout.off('data', look);
        resolve(m[1].replace('[::1]', '127.0.0.1'));
      }
    };
    child.stdout.on('data', look);
    void exited.then((code) =>
      reject(
        new Error(`the server exited (${code}) before listening:\n${(out + err).slice(-3000)}`),
      ),
    );
  });
  listening.catch(() => undefined); // a caller that only awaits `exited` need not handle it
  return {
    pid,
    stdout: () => out,
    stderr: () => err,
    output: () => out + err,
    alive: () => running.has(pid),
    listening,
    exited,
    kill(signal = 'SIGKILL') {
      if (running.has(pid)) signalGroup(pid, signal);
      return exited;
    },
  };
}

/** Spawns the server and waits until it listens; on a failed boot nothing is left running. */
export async function startServer(
  o: ServerProcessOptions,
): Promise<ServerProcess & { url: string }> {
  const server = spawnServer(o);
  try {
    return Object.assign(server, { url: await server.listening });
  } catch (e) {
    await server.kill();
    throw e;
  }
}
