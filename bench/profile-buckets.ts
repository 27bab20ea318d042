/**
 * npx ts-node --transpile-only bench/profile-buckets.ts <file.cpuprofile>
 *
 * Where a server's busy time went, from a V8 CPU profile (BENCH_CPU_PROF=<path> npm run bench writes
 * <path>.clients<N>.cpuprofile over the measured conversations of each level): self time
 * summed per bucket (an npm package, the project's own src/, Node's internals by module, GC), as shares of
 * the busy (non-idle) time.
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { url: string; functionName: string };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

function bucketOf(n: Node): string {
  const { url, functionName } = n.callFrame;
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)') return '(program: native, not attributed)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.includes('/src/')) {
    const area = /\/src\/([^/]+)/.exec(url);
    return `project src/${area ? area[1] : ''}`;
  }
  if (url.startsWith('node:')) {
    const mod = url.slice(5).split('/');
    return `node:${mod[0] === 'internal' ? (mod[1] ?? 'internal').replace(/\.js$/, '') : mod[0]}`;
  }
  return url;
}

/** Native code and V8 builtins have no url: they count for the nearest caller that has one. */
const SQLITE_NATIVE = new Set(['run', 'all', 'get', 'exec', 'pragma', 'Statement', 'prepare']);

function attributed(n: Node): string {
  if (n.callFrame.url !== '' || n.callFrame.functionName.startsWith('(')) return bucketOf(n);
  if (SQLITE_NATIVE.has(n.callFrame.functionName)) return 'SQLite itself (better-sqlite3 native)';
  if (n.callFrame.functionName === 'writev' || n.callFrame.functionName === 'writeUtf8String')
    return 'socket writes (native)';
  for (let p = parent.get(n.id); p; p = parent.get(p.id))
    if (p.callFrame.url !== '') return `${bucketOf(p)} (native calls)`;
  return '(native, no caller)';
}

const profile = JSON.parse(readFileSync(process.argv[2], 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, Node>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n);
const totals = new Map<string, number>();
profile.samples.forEach((id, i) => {
  const b = attributed(byId.get(id)!);
  totals.set(b, (totals.get(b) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const idle = totals.get('idle') ?? 0;
totals.delete('idle');
// the profiler's own session (node:inspector) is not the server's work
const profiler = [...totals.keys()].filter((b) => b.startsWith('node:inspector'));
for (const b of profiler) totals.delete(b);
const busy = [...totals.values()].reduce((a, b) => a + b, 0);
process.stdout.write(`busy_ms=${Math.round(busy / 1000)} idle_ms=${Math.round(idle / 1000)}\n`);
for (const [b, us] of [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, 25))
  process.stdout.write(`${((us / busy) * 100).toFixed(1).padStart(5)} %  ${b}\n`);
