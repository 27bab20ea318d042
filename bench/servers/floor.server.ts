/**
 * The floor of `npm run bench:floor`: a plain `node:http` + `better-sqlite3` server that writes the same rows
 * per conversation as the app (run, user message; per step the step row and the model's messages, the
 * tool-call claim, the batch state, the tool return and Letta's heartbeat message; at the end the batch
 * state deleted, the run and the agent's last stop reason updated), each step in its own transaction
 * committed before the next step, with the same SQLite settings (WAL, synchronous=NORMAL). No rules, no
 * framework, no ORM: what a conversation costs at the least on this machine.
 */
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { seedText, serveBench } from '../support/server-process';

/** The reason the app's heartbeat gives after the bench's `send_message` (a `continue_loop` rule). */
const HEARTBEAT =
  '[This is an automated system message hidden from the user] Continuing: continue tool rule.';

type Turn = {
  content?: string;
  tool_calls?: { name: string; arguments: Record<string, unknown> }[];
};

serveBench(async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-floor-'));
  const db = new Database(path.join(dir, 'db.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('temp_store = MEMORY');
  db.pragma('cache_size = -32768');
  db.exec(`
    CREATE TABLE agents (id TEXT PRIMARY KEY, body TEXT NOT NULL, last_stop_reason TEXT, updated_at INTEGER);
    CREATE TABLE runs (id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, status TEXT NOT NULL, stop_reason TEXT,
      usage TEXT, created_at INTEGER NOT NULL, completed_at INTEGER);
    CREATE TABLE steps (id TEXT PRIMARY KEY, run_id TEXT NOT NULL, agent_id TEXT NOT NULL, step_number INTEGER,
      usage TEXT, created_at INTEGER NOT NULL);
    CREATE TABLE messages (id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, seq_id INTEGER NOT NULL, run_id TEXT,
      step_id TEXT, message_type TEXT NOT NULL, payload TEXT NOT NULL, created_at INTEGER NOT NULL);
    CREATE UNIQUE INDEX messages_seq ON messages (agent_id, seq_id);
    CREATE INDEX messages_run ON messages (run_id);
    CREATE TABLE claims (agent_id TEXT NOT NULL, tool_call_id TEXT NOT NULL, at INTEGER NOT NULL,
      PRIMARY KEY (agent_id, tool_call_id));
    CREATE TABLE batch_states (batch_id TEXT PRIMARY KEY, state TEXT NOT NULL, updated_at INTEGER NOT NULL);
  `);
  const q = {
    insertAgent: db.prepare('INSERT INTO agents (id, body) VALUES (?, ?)'),
    agent: db.prepare('SELECT body FROM agents WHERE id = ?'),
    insertRun: db.prepare(
      "INSERT INTO runs (id, agent_id, status, created_at) VALUES (?, ?, 'running', ?)",
    ),
    finishRun: db.prepare(
      "UPDATE runs SET status = 'completed', stop_reason = ?, usage = ?, completed_at = ? WHERE id = ?",
    ),
    stopReason: db.prepare('UPDATE agents SET last_stop_reason = ?, updated_at = ? WHERE id = ?'),
    insertStep: db.prepare(
      'INSERT INTO steps (id, run_id, agent_id, step_number, usage, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    insertMessage: db.prepare(
      'INSERT INTO messages (id, agent_id, seq_id, run_id, step_id, message_type, payload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    claim: db.prepare('INSERT INTO claims (agent_id, tool_call_id, at) VALUES (?, ?, ?)'),
    saveBatch: db.prepare(
      'INSERT INTO batch_states (batch_id, state, updated_at) VALUES (?, ?, ?) ON CONFLICT (batch_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at',
    ),
    deleteBatch: db.prepare('DELETE FROM batch_states WHERE batch_id = ?'),
    maxSeq: db.prepare('SELECT MAX(seq_id) AS max FROM messages WHERE agent_id = ?'),
  };
  const seqs = new Map<string, number>();
  const nextSeq = (agentId: string) => {
    const s = (seqs.get(agentId) ?? (q.maxSeq.get(agentId) as { max: number | null }).max ?? 0) + 1;
    seqs.set(agentId, s);
    return s;
  };
  type Msg = {
    id: string;
    message_type: string;
    step_id: string | null;
    payload: Record<string, unknown>;
  };
  const write = (agentId: string, runId: string, m: Msg, at: number) =>
    q.insertMessage.run(
      m.id,
      agentId,
      nextSeq(agentId),
      runId,
      m.step_id,
      m.message_type,
      JSON.stringify(m.payload),
      at,
    );

  const converse = db.transaction.bind(db);
  function handleMessages(agentId: string, body: { messages: { content: string }[] }) {
    const row = q.agent.get(agentId) as { body: string } | undefined;
    if (!row) return null;
    const script = (JSON.parse(row.body) as { model_script: Turn[] }).model_script;
    const runId = `run-${randomUUID()}`;
    const batchId = `batch-${randomUUID()}`;
    const out: Msg[] = [];
    converse(() => {
      const at = Date.now();
      q.insertRun.run(runId, agentId, at);
      const user = {
        id: `message-${randomUUID()}`,
        message_type: 'user_message',
        step_id: null,
        payload: { content: body.messages[0].content },
      };
      write(agentId, runId, user, at);
    })();
    const usage = { step_count: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    for (const [i, turn] of script.entries()) {
      converse(() => {
        const at = Date.now();
        const stepId = `step-${randomUUID()}`;
        usage.step_count++;
        q.insertStep.run(stepId, runId, agentId, i + 1, JSON.stringify({ total_tokens: 0 }), at);
        const msg = (message_type: string, payload: Record<string, unknown>) => {
          const m = { id: `message-${randomUUID()}`, message_type, step_id: stepId, payload };
          write(agentId, runId, m, at);
          out.push(m);
        };
        if (turn.content) msg('assistant_message', { content: turn.content });
        for (const c of turn.tool_calls ?? []) {
          const callId = `call-${randomUUID()}`;
          msg('tool_call_message', {
            tool_call: {
              name: c.name,
              arguments: JSON.stringify(c.arguments),
              tool_call_id: callId,
            },
          });
          msg('assistant_message', { content: c.arguments.message, _derived: true });
          q.claim.run(agentId, callId, at);
          q.saveBatch.run(
            batchId,
            JSON.stringify({ counts: { [c.name]: i + 1 }, updatedAt: at }),
            at,
          );
          msg('tool_return_message', {
            tool_return: 'None',
            status: 'success',
            tool_call_id: callId,
            name: c.name,
          });
        }
        // Letta's heartbeat user message before the next model call, as the app writes it after a call
        if (turn.tool_calls?.length && i < script.length - 1)
          msg('user_message', {
            content: JSON.stringify(
              { type: 'heartbeat', reason: HEARTBEAT, time: new Date(at).toISOString() },
              null,
              2,
            ),
          });
        if (i === script.length - 1) {
          q.deleteBatch.run(batchId);
          q.finishRun.run('end_turn', JSON.stringify(usage), at, runId);
          q.stopReason.run('end_turn', at, agentId);
        }
      })();
    }
    return {
      messages: out.map((m) => ({
        id: m.id,
        message_type: m.message_type,
        step_id: m.step_id,
        run_id: runId,
        ...m.payload,
      })),
      stop_reason: { message_type: 'stop_reason', stop_reason: 'end_turn' },
      usage: { message_type: 'usage_statistics', ...usage },
    };
  }

  const send = (res: ServerResponse, status: number, value: unknown) => {
    const text = JSON.stringify(value);
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<
        string,
        unknown
      >;
      const m = /^\/v1\/agents\/([^/]+)\/messages$/.exec(req.url ?? '');
      if (req.method === 'POST' && req.url === '/v1/agents/') {
        const id = `agent-${randomUUID()}`;
        q.insertAgent.run(id, JSON.stringify(body));
        return send(res, 200, { id, ...body });
      }
      if (req.method === 'POST' && m) {
        const result = handleMessages(m[1], body as { messages: { content: string }[] });
        return result ? send(res, 200, result) : send(res, 404, { code: 'NOT_FOUND' });
      }
      send(res, 404, { code: 'NOT_FOUND' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seedHistory: (agentId, n) => {
      converse(() => {
        for (let i = 0; i < n; i++) {
          const { type, content } = seedText(i);
          write(
            agentId,
            '',
            {
              id: `message-${randomUUID()}`,
              message_type: type,
              step_id: null,
              payload: { content },
            },
            Date.now(),
          );
        }
      })();
      return Promise.resolve();
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
