import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

/**
 * The README's tour, run as printed: a clone of the repository (its node_modules linked, as after
 * `npm install`), the first block's two commands as the two terminals, the second block in bash.
 * Only PORT differs (a free port, so test runs never collide); the tour reads it.
 */
const root = path.join(__dirname, '..', '..');

/** The fenced bash blocks of the README's tour section. */
function tourBlocks(readme: string): string[] {
  const section = readme.slice(
    readme.indexOf('## A 5-minute tour with curl'),
    readme.indexOf('\n## ', readme.indexOf('## A 5-minute tour with curl') + 5),
  );
  return [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]);
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe('README tour, as printed', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'readme-tour-'));
  const clone = path.join(dir, 'repo');
  const children: ChildProcess[] = [];
  afterAll(() => {
    // the process groups: `bash -c` and everything it started (npm, node)
    for (const c of children) {
      try {
        process.kill(-c.pid!, 'SIGKILL');
      } catch {
        // the group has already ended
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs end to end: an agent, the release bot refused then corrected, the refund desk parked then approved', async () => {
    execFileSync('git', ['clone', '--quiet', root, clone]);
    symlinkSync(path.join(root, 'node_modules'), path.join(clone, 'node_modules'));
    const [terminals, script] = tourBlocks(readFileSync(path.join(clone, 'README.md'), 'utf8'));
    const commands = terminals
      .split('\n')
      .map((l) => l.replace(/#.*/, '').trim())
      .filter(Boolean);
    expect(commands).toEqual(['npm start', 'npm run example:tools']);

    const port = await freePort();
    // the user's environment, less what would point the server elsewhere
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port) };
    for (const k of Object.keys(env))
      if (
        /^(DATABASE_URL|TEST_DATABASE_URL|SQLITE_PATH|AGENTS_DIR|TOOLS_DIR|CONFIG_FILE|API_KEYS)$/.test(
          k,
        )
      )
        delete env[k];
    const start = (command: string) => {
      // its own process group, so afterAll can end `npm start` and the node it started
      const child = spawn('bash', ['-c', command], {
        cwd: clone,
        env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      return { child, output: () => out };
    };
    const server = start(commands[0]);
    const tools = start(commands[1]);
    for (let i = 0; !server.output().includes('listening on '); i++) {
      if (server.child.exitCode !== null || i > 1200) throw new Error(`server: ${server.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // the example tool server fails fast on a taken port: another run serves the same routes then
    for (let i = 0; !/example tools on|EADDRINUSE/.test(tools.output()); i++) {
      if (tools.child.exitCode !== null || i > 1200) throw new Error(`tools: ${tools.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    const run = start(`set -eo pipefail\n${script}`);
    const code = await new Promise((r) => run.child.once('exit', r));
    const out = run.output();
    expect({ code, out }).toMatchObject({ code: 0 });
    expect(out).toContain('"content":"You said: hello"');
    expect(out).toContain('[ToolRuleViolation] deploy requires run_tests earlier in this pass');
    // the release bot's answer is its exit_loop tool, called without a heartbeat request: end_turn (Letta)
    expect(out).toContain(
      '"content":"billing v1.4.2 is tested and deployed to staging."}],"stop_reason":{"message_type":"stop_reason","stop_reason":"end_turn"}',
    );
    expect(out).toContain('"stop_reason":"requires_approval"');
    // the refund ran with the secret (the example tool server refuses a refund without it)
    expect(out).toContain(
      '"name":"issue_refund","tool_return":"{\\"refund_id\\":\\"rf_A-1001\\",\\"amount_cents\\":1999,\\"status\\":\\"issued\\"}","status":"success"',
    );
    expect(out).toMatch(/"scope":"refunds"[^}]*"decision":"approve_for_duration"/);
  }, 240_000);
});
