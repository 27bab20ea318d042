/**
 * The benchmarked server runs in a child process of its own, as a real server would: the load generator's
 * CPU is not counted, and the server's own CPU time comes from `process.cpuUsage()` of the child, asked
 * over the IPC channel before and after each measured level.
 */
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import * as path from 'node:path';

/** What a benchmarked server offers the load generator (implemented in the child). */
export interface BenchTarget {
  baseUrl: string;
  /** Gives the agent `n` messages of history before the measurement (HISTORY=…). */
  seedHistory(agentId: string, n: number): Promise<void>;
  close(): Promise<void>;
}

export interface ServerUsage {
  /** user + system CPU time of the server process since it started, µs */
  cpuUs: number;
  rssMb: number;
  /** The highest RSS sampled (every 50 ms) since the previous `usage()`: over a measured level, its peak. */
  rssPeakMb: number;
}

export interface BenchServer {
  baseUrl: string;
  usage(): Promise<ServerUsage>;
  /** A V8 CPU profile of the server between start and stop, written to `file` (bench/profile-buckets.ts reads it). */
  profileStart(): Promise<void>;
  profileStop(file: string): Promise<void>;
  seedHistory(agentId: string, n: number): Promise<void>;
  close(): Promise<void>;
}

type Request = {
  id: number;
  cmd: 'usage' | 'seed' | 'close' | 'profileStart' | 'profileStop';
  agentId?: string;
  n?: number;
  file?: string;
};
type Reply = { id: number; ok: boolean; value?: unknown; error?: string };

/** Starts `bench/<file>` (a module calling serveBench) in a child process. */
export async function startServerProcess(file: string): Promise<BenchServer> {
  // compiled (`npm run bench:compiled`): the server runs as JavaScript, without ts-node's compiler in memory
  const compiled = __filename.endsWith('.js');
  const child = fork(
    path.join(__dirname, '..', compiled ? file.replace(/\.ts$/, '.js') : file),
    [],
    {
      // BENCH_CPU_PROF=<dir>: the server writes a V8 CPU profile there when it exits (bench/profile-buckets.ts reads it)
      execArgv: [
        ...(compiled ? [] : ['-r', 'ts-node/register/transpile-only']),
        ...(process.env.BENCH_CPU_PROF
          ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
          : []),
      ],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  let nextId = 0;
  const waiting = new Map<number, (r: Reply) => void>();
  const baseUrl = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) =>
      reject(new Error(`bench server exited (${code}) before it listened`)),
    );
    child.on('message', (m: Reply | { listening: string }) => {
      if ('listening' in m) resolve(m.listening);
      else waiting.get(m.id)?.(m);
    });
  });
  const ask = (cmd: Request['cmd'], extra: Partial<Request> = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const id = ++nextId;
      waiting.set(id, (r) => {
        waiting.delete(id);
        if (r.ok) resolve(r.value);
        else reject(new Error(r.error));
      });
      child.send({ id, cmd, ...extra } satisfies Request);
    });
  return {
    baseUrl,
    usage: () => ask('usage') as Promise<ServerUsage>,
    profileStart: async () => void (await ask('profileStart')),
    profileStop: async (file) => void (await ask('profileStop', { file })),
    seedHistory: async (agentId, n) => void (await ask('seed', { agentId, n })),
    close: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      await ask('close').catch(() => undefined);
      await exited;
    },
  };
}

/** The child's side: starts the target, then answers the parent's requests. */
export function serveBench(start: () => Promise<BenchTarget>): void {
  const session = new Session();
  const post = (method: string) =>
    new Promise<unknown>((resolve, reject) =>
      session.post(method, (err, res) => (err ? reject(err) : resolve(res))),
    );
  const mb = () => process.memoryUsage.rss() / 1024 / 1024;
  let peak = 0;
  setInterval(() => (peak = Math.max(peak, mb())), 50).unref();
  start()
    .then((target) => {
      process.on('message', (m: Request) => {
        const reply = (r: Omit<Reply, 'id'>) => process.send!({ id: m.id, ...r });
        const run = async (): Promise<unknown> => {
          switch (m.cmd) {
            case 'usage': {
              const u = process.cpuUsage();
              const rssMb = mb();
              const usage: ServerUsage = {
                cpuUs: u.user + u.system,
                rssMb,
                rssPeakMb: Math.max(peak, rssMb),
              };
              peak = 0;
              return usage;
            }
            case 'seed':
              return target.seedHistory(m.agentId!, m.n!);
            case 'profileStart':
              session.connect();
              await post('Profiler.enable');
              return post('Profiler.start');
            case 'profileStop': {
              const { profile } = (await post('Profiler.stop')) as { profile: unknown };
              writeFileSync(m.file!, JSON.stringify(profile));
              session.disconnect();
              return null;
            }
            case 'close':
              await target.close();
              setImmediate(() => process.exit(0));
              return null;
          }
        };
        run().then(
          (value) => reply({ ok: true, value }),
          (e: unknown) => reply({ ok: false, error: e instanceof Error ? e.stack : String(e) }),
        );
      });
      process.send!({ listening: target.baseUrl });
    })
    .catch((e: unknown) => {
      process.stderr.write(`bench server failed: ${e instanceof Error ? e.stack : String(e)}\n`);
      process.exit(1);
    });
}

/** The history rows a seeded agent starts with: user and assistant turns, about 25 tokens each. */
export function seedText(i: number): {
  type: 'user_message' | 'assistant_message';
  content: string;
} {
  return i % 2 === 0
    ? {
        type: 'user_message',
        content: `question ${i}: where is the order I placed last week, please?`,
      }
    : {
        type: 'assistant_message',
        content: `answer ${i}: it left the warehouse and arrives tomorrow.`,
      };
}
