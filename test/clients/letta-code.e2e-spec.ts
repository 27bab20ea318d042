/* eslint-disable @typescript-eslint/no-explicit-any */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startApp, TestApp } from '../support/app-harness';
import {
  FakeModelServer,
  RecordedRequest,
  startFakeModelServer,
} from '../support/fake-model-server';
import { api } from '../support/processing-fixtures';

/** Letta Code at a pinned version: its CLI is one bundled file, run headless (`-p`) on this Node. */
const LETTA_CODE = '@letta-ai/letta-code@0.32.18';
const NOTES = 'the launch code is 7-7-3';

/**
 * Letta Code (the CLI, unmodified) against the server with the fake model: with a new agent and with an
 * existing one, the model calls one of Letta Code's local tools (Read or exec_command), the CLI runs it after the
 * approval round trip (a client tool's ToolReturn), and the final answer arrives.
 */
describe('clients: Letta Code headless', () => {
  let dir: string;
  let cli: string | null = null;
  let t: TestApp;
  let fake: FakeModelServer;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'letta-code-'));
    try {
      execFileSync('npm', ['pack', LETTA_CODE, '--pack-destination', dir, '--silent'], {
        cwd: dir,
        stdio: 'pipe',
        timeout: 120_000,
      });
      const tgz = execFileSync('sh', ['-c', 'ls *.tgz'], { cwd: dir }).toString().trim();
      execFileSync('tar', ['xzf', tgz], { cwd: dir });
      // its one runtime need outside the bundle is `ws`, which this project has
      symlinkSync(path.resolve('node_modules'), path.join(dir, 'node_modules'));
      cli = path.join(dir, 'package', 'letta.js');
    } catch (e) {
      console.log(
        `Letta Code tests skipped: npm pack ${LETTA_CODE} failed (${String(e).slice(0, 200)})`,
      );
    }
    fake = await startFakeModelServer();
    t = await startApp({ overrides: { models: { openai: { base_url: fake.baseUrl } } } });
  }, 180_000);
  afterAll(async () => {
    await t?.close();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The model reads the notes with Letta Code's Read tool, then answers with what it read. */
  function readThenAnswer(notesPath: string) {
    fake.respond((req: RecordedRequest) => {
      const returned = req.messages.find((m: any) => m.role === 'tool');
      if (returned)
        return {
          content: `From the notes: ${String(returned.content).includes(NOTES) ? NOTES : 'nothing'}`,
        };
      // the toolset depends on the model (Claude's has Read, Codex's exec_command)
      if (req.toolNames.includes('Read')) {
        return { tool_calls: [{ name: 'Read', arguments: { file_path: notesPath } }] };
      }
      if (req.toolNames.includes('exec_command')) {
        const cmd = `cat ${notesPath}`;
        return {
          tool_calls: [{ name: 'exec_command', arguments: { cmd, description: 'Read the notes' } }],
        };
      }
      return { content: `no Read tool offered: ${req.toolNames.join(', ')}` };
    });
  }

  function letta(args: string[], project: string): Promise<{ code: number; out: string }> {
    const home = path.join(project, '.home');
    mkdirSync(home, { recursive: true });
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [cli!, '-p', 'What do my notes say?', ...args],
        {
          cwd: project,
          timeout: 60_000,
          env: {
            PATH: process.env.PATH,
            HOME: home,
            LETTA_BASE_URL: t.baseUrl,
            LETTA_API_KEY: 'none',
          },
        },
        (err, stdout, stderr) => resolve({ code: err ? 1 : 0, out: `${stdout}\n${stderr}` }),
      );
    });
  }

  function project(): { dir: string; notes: string } {
    const p = mkdtempSync(path.join(dir, 'project-'));
    writeFileSync(path.join(p, 'notes.txt'), `${NOTES}\n`);
    return { dir: p, notes: path.join(p, 'notes.txt') };
  }

  it('a new agent: the model calls a Letta Code local tool, the CLI runs it, the answer arrives', async () => {
    if (!cli) return;
    const p = project();
    readThenAnswer(p.notes);
    const res = await letta(['--new-agent', '-m', 'openai/fake-model'], p.dir);
    expect(res.out).toContain(`From the notes: ${NOTES}`);
  }, 90_000);

  it('an existing agent: the same round trip', async () => {
    if (!cli) return;
    const p = project();
    const agent = await api(t, 'POST', '/v1/agents/', {
      name: 'existing',
      system: 'You are a helpful agent.',
      model: 'openai/fake-model',
      include_base_tools: false,
    });
    expect(agent.status).toBe(200);
    readThenAnswer(p.notes);
    const res = await letta(['--agent', agent.body.id], p.dir);
    expect(res.out).toContain(`From the notes: ${NOTES}`);
  }, 90_000);
});
