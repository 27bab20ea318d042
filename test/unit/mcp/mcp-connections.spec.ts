import { loadConfig } from '../../../src/config/app-config';
import { HostPolicy } from '../../../src/core/net/host-policy';
import {
  describe as describeError,
  McpConnections,
  McpEndpoint,
} from '../../../src/mcp/mcp-connections';
import { stdioServerScript } from '../../support/mcp-test-server';

/**
 * The stdio pool against real processes (the SDK test server), with a fake clock for idleness and
 * backoff: bounded, least recently used idle one stopped first, idle ones stopped, restarts backed off.
 */
describe('McpConnections', () => {
  let now = 1_000_000;
  const clock = { now: () => now };
  const config = loadConfig({}, { mcp: { max_running_stdio: 1, idle_seconds: 60 } });
  let pool: McpConnections;
  let script: string;
  const signal = new AbortController().signal;

  const server = (id: string, args?: string[]): McpEndpoint => ({
    serverId: id,
    serverName: id,
    version: 1,
    transport: { type: 'stdio', command: process.execPath, args: args ?? [script], env: {} },
  });
  const pid = async (ep: McpEndpoint) => {
    const r = await pool.callTool(ep, 'pid', {}, {}, signal);
    return Number((r.content[0] as { text: string }).text);
  };
  const alive = (p: number) => {
    try {
      process.kill(p, 0);
      return true;
    } catch {
      return false;
    }
  };
  const gone = async (p: number) => {
    for (let i = 0; i < 200 && alive(p); i++) await new Promise((r) => setTimeout(r, 25));
    return !alive(p);
  };

  beforeAll(() => {
    script = stdioServerScript();
  });
  beforeEach(() => {
    pool = new McpConnections(config, new HostPolicy([], []), clock);
  });
  afterEach(() => pool.onApplicationShutdown());

  it('keeps a server warm, stops the least recently used idle one past max_running_stdio', async () => {
    const a = server('a');
    const first = await pid(a);
    expect(await pid(a)).toBe(first); // warm: the same process
    const b = await pid(server('b')); // the pool holds 1: a is stopped
    expect(await gone(first)).toBe(true);
    expect(alive(b)).toBe(true);
  });

  it('stops a server idle for idle_seconds, and every server at shutdown', async () => {
    const a = server('a');
    const first = await pid(a);
    now += 59_000;
    pool.stopIdle();
    expect(alive(first)).toBe(true);
    now += 2_000;
    pool.stopIdle();
    expect(await gone(first)).toBe(true);
    const second = await pid(a); // started again on demand
    await pool.onApplicationShutdown();
    expect(await gone(second)).toBe(true);
  });

  it('a server that keeps dying is restarted immediately once, then after 1 s, 2 s …', async () => {
    const dying = server('dying', ['-e', 'process.exit(3)']);
    const fails = () => pool.callTool(dying, 'pid', {}, {}, signal);
    await expect(fails()).rejects.toThrow(/could not connect/);
    await expect(fails()).rejects.toThrow(/could not connect/); // the first restart is immediate
    await expect(fails()).rejects.toThrow(
      /failed 2 times in a row; the next start is allowed in 1 s/,
    );
    now += 1_000;
    await expect(fails()).rejects.toThrow(/could not connect/);
    await expect(fails()).rejects.toThrow(/next start is allowed in 2 s/);
    await pool.forget('dying'); // a changed declaration starts afresh
    await expect(fails()).rejects.toThrow(/could not connect/);
  });

  // QA: over stdio only the SDK's own 10 MiB buffer applied, whatever mcp.max_message_bytes said
  it('a stdio message past mcp.max_message_bytes (an endless line, a long tool list) fails naming the bound; the process is stopped', async () => {
    const bounded = new McpConnections(
      loadConfig({}, { mcp: { max_message_bytes: 65536 } }),
      new HostPolicy([], []),
      clock,
    );
    try {
      const flood = server('flood');
      const running = Number(
        ((await bounded.callTool(flood, 'pid', {}, {}, signal)).content[0] as { text: string })
          .text,
      );
      await expect(bounded.callTool(flood, 'flood', {}, {}, signal)).rejects.toThrow(
        'a message is over mcp.max_message_bytes (65536)',
      );
      expect(await gone(running)).toBe(true);
      // a tool list past the bound (a 70 KB description) fails the listing the same way
      const listing = {
        ...flood,
        transport: { ...flood.transport, env: { TOOL_NOTE: 'n'.repeat(70_000) } },
      };
      await expect(bounded.listTools(listing as McpEndpoint, 100)).rejects.toThrow(
        'a message is over mcp.max_message_bytes (65536)',
      );
    } finally {
      await bounded.onApplicationShutdown();
    }
  });
});

test('an error of several lines (the SDK’s schema errors) reads on one line, whole', () => {
  const schemaError = new Error(
    '[\n  {\n    "code": "invalid_type",\n    "path": ["result"]\n  }\n]',
  );
  expect(describeError(schemaError)).toBe('[ { "code": "invalid_type", "path": ["result"] } ]');
  expect(describeError(new Error('x'.repeat(600)))).toHaveLength(500);
});
