import { connect, type Socket } from 'node:net';
import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { MessageEntity } from '../../../src/processing/entities/message.entity';
import { RunStream } from '../../../src/processing/run-stream';
import { startApp, TestApp } from '../../support/app-harness';
import { api } from '../consent-helpers';

/**
 * QA: a client that never read the stream of a resumed 2,000-step run held 400 MB on the server (ten such:
 * 2.9 GB): the resume loaded the whole run and wrote every frame, whatever `res.write` answered. A resume
 * now reads a page at a time and waits for the client to read each frame that did not fit; a client that
 * reads nothing for a while, or a stream whose unread bytes pass `streaming.max_buffered_bytes` (live frames
 * cannot wait), is ended as a client disconnect ends it (the run itself is untouched).
 */
describe('security: SSE streams and clients that do not read', () => {
  const CAP = 64 * 1024;
  const STEPS = 2500;
  const TEXT = 'x'.repeat(8 * 1024);
  let t: TestApp;
  let agentId: string;
  let runId: string;

  beforeAll(async () => {
    t = await startApp({ overrides: { streaming: { max_buffered_bytes: CAP } } });
    agentId = (
      await api(t, 'POST', '/v1/agents/', { model_script: [{ content: 'hello' }] }, undefined)
    ).body.id;
    const sent = await api(t, 'POST', `/v1/agents/${agentId}/messages`, {
      messages: [{ role: 'user', content: 'go' }],
    });
    expect(sent.status).toBe(200);
    const run = (await api(t, 'GET', `/v1/runs/?agent_ids=${agentId}`)).body[0];
    runId = run.id;
    // a long run: thousands of stored messages of 8 KB after the ones it wrote (20 MB in all)
    const repo = t.app.get(DataSource).getRepository(MessageEntity);
    const last = await repo.findOne({ where: { agent_id: agentId }, order: { seq_id: 'DESC' } });
    const rows = Array.from({ length: STEPS }, (_, i) => ({
      id: `message-bulk-${i}-${agentId.slice(-12)}`,
      tenant_id: last!.tenant_id,
      agent_id: agentId,
      seq_id: Number(last!.seq_id) + 1 + i,
      run_id: runId,
      step_id: null,
      batch_id: last!.batch_id,
      conversation_id: last!.conversation_id,
      message_type: 'reasoning_message' as const,
      payload: { reasoning: `${i} ${TEXT}` },
      created_at: Date.now(),
    }));
    for (let i = 0; i < rows.length; i += 200) await repo.insert(rows.slice(i, i + 200));
  }, 120_000);
  const stall = RunStream.replayStallMs;
  afterAll(async () => {
    RunStream.replayStallMs = stall;
    await t.close();
  });

  /** A raw HTTP request for the run's stream whose response the client never reads. */
  const stalled = (): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const { hostname, port } = new URL(t.baseUrl);
      const body = JSON.stringify({});
      const s = connect(Number(port), hostname, () => {
        s.write(
          `POST /v1/runs/${runId}/stream HTTP/1.1\r\nHost: ${hostname}\r\ncontent-type: application/json\r\n` +
            `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        s.pause(); // never read: the kernel's buffers fill, then the server's
        resolve(s);
      });
      s.on('error', reject);
    });

  /** The whole stream of the run, read as a client that reads: its frames' payloads. */
  const resume = async (startingAfter?: number) => {
    const res = await fetch(`${t.baseUrl}/v1/runs/${runId}/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(startingAfter === undefined ? {} : { starting_after: startingAfter }),
    });
    expect(res.status).toBe(200);
    return (await res.text())
      .split('\n\n')
      .filter((f) => f.startsWith('data: '))
      .map((f) => f.slice(6));
  };

  it('a resumed long run whose client does not read: the stream is ended past the cap; the server stays healthy', async () => {
    RunStream.replayStallMs = 300; // 30 s in service
    const warn = jest.spyOn(Logger.prototype, 'warn');
    const sockets = await Promise.all([stalled(), stalled(), stalled()]);
    const ended = () =>
      warn.mock.calls.filter((c) => String(c[0]).includes('does not read it')).length;
    for (let i = 0; ended() < sockets.length && i < 600; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(ended()).toBe(sockets.length);
    warn.mockRestore();

    // what reached the client before the end is a truncated stream: no [DONE]; the connection is closed
    const s = sockets[0];
    let received = '';
    s.setEncoding('utf8');
    s.on('data', (d: string) => (received += d));
    const closed = new Promise((r) => s.on('close', r));
    s.resume();
    await closed;
    expect(received.startsWith('HTTP/1.1 200')).toBe(true);
    expect(received).not.toContain('[DONE]');
    expect(received.length).toBeLessThan(STEPS * TEXT.length);
    for (const other of sockets.slice(1)) other.destroy();

    // the server answers; the run is as it was
    expect((await api(t, 'GET', '/v1/health/')).status).toBe(200);
    expect((await api(t, 'GET', `/v1/runs/${runId}`)).body.status).toBe('completed');
  }, 60_000);

  it('a client that reads gets every frame of the long run in order, page after page, then [DONE]', async () => {
    const frames = await resume();
    expect(frames.at(-1)).toBe('[DONE]');
    const messages = frames
      .slice(0, -1)
      .map((f) => JSON.parse(f))
      .filter((f) => typeof f.seq_id === 'number');
    const bulk = messages.filter((m) => m.message_type === 'reasoning_message');
    expect(bulk).toHaveLength(STEPS);
    expect(bulk.map((m) => Number(String(m.reasoning).split(' ')[0]))).toEqual(
      Array.from({ length: STEPS }, (_, i) => i),
    );
    const seqs = messages.map((m) => m.seq_id);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    // after a seq_id: only what follows it
    const from = bulk[STEPS - 150].seq_id;
    const rest = (await resume(from))
      .slice(0, -1)
      .map((f) => JSON.parse(f))
      .filter((f) => f.message_type === 'reasoning_message');
    expect(rest.map((m) => m.seq_id)).toEqual(bulk.slice(STEPS - 149).map((m) => m.seq_id));
  }, 60_000);
});
