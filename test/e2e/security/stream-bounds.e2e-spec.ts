/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answersWithStream } from '../../../src/auth/stream-slots.limiter';
import { startApp, TestApp } from '../../support/app-harness';
import { api } from '../consent-helpers';

/**
 * QA: one API key opened 2,000 SSE streams (the server's file descriptors went from 35 to 2,034); WebSockets
 * were capped per key, streams were not. Open streams are counted per key across every streaming route
 * (`streaming.max_streams_per_key`): past it 429 TOO_MANY_STREAMS; a closed stream gives its slot back.
 */
describe('security: bounded SSE streams', () => {
  const MAX = 3;
  const A = 'sk-a';
  const B = 'sk-b';
  let t: TestApp;
  /** A tool server that never answers: each run stays in its tool call, so its stream stays open. */
  let hang: Server;
  const held: IncomingMessage[] = [];
  let agentId: string;
  const opened: AbortController[] = [];

  beforeAll(async () => {
    hang = createServer((req) => void held.push(req));
    await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(hang.address() as AddressInfo).port}/hang`;
    t = await startApp({
      overrides: {
        auth: {
          api_keys: [
            { key: A, tenant: 'a' },
            { key: B, tenant: 'b' },
          ],
        },
        streaming: { max_streams_per_key: MAX },
        processing: { shutdown_grace_seconds: 0 }, // the hanging runs are not waited for at close
      },
    });
    const tool = {
      name: 'hang',
      safety: 'read_only',
      kind: 'http',
      http: { url, method: 'POST', timeout_ms: 600_000 },
    };
    for (const key of [A, B])
      expect((await api(t, 'POST', '/v1/tools/', tool, key)).status).toBe(200);
    agentId = (await newAgent(A)).id;
  });
  afterAll(async () => {
    for (const c of opened) c.abort();
    await t.close();
    held.forEach((r) => r.socket.destroy());
    await new Promise((r) => hang.close(r));
  });

  const newAgent = async (key: string) =>
    (
      await api(
        t,
        'POST',
        '/v1/agents/',
        { tools: ['hang'], model_script: [{ tool_calls: [{ name: 'hang', arguments: {} }] }] },
        key,
      )
    ).body;
  /** Opens a stream and keeps it open (its body is never read): the status and the error body, if any. */
  const open = async (path: string, key: string, body: Record<string, unknown> = {}) => {
    const abort = new AbortController();
    const res = await fetch(t.baseUrl + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'go' }], ...body }),
      signal: abort.signal,
    });
    if (res.status === 200) {
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      opened.push(abort);
      return { status: res.status, body: null as any, close: () => abort.abort() };
    }
    return { status: res.status, body: (await res.json()) as any, close: () => undefined };
  };

  it('one key opens streams on every streaming route; the one past the bound → 429 TOO_MANY_STREAMS', async () => {
    const conversation = (await api(t, 'POST', '/v1/conversations', { agent_id: agentId }, A)).body
      .id;
    const first = await open(`/v1/agents/${agentId}/messages/stream`, A);
    expect(first.status).toBe(200);
    expect((await open(`/v1/agents/${agentId}/messages`, A, { streaming: true })).status).toBe(200);
    expect((await open(`/v1/conversations/${conversation}/messages`, A)).status).toBe(200);

    const runId = (await api(t, 'GET', `/v1/runs/?agent_ids=${agentId}`, undefined, A)).body[0].id;
    for (const path of [
      `/v1/runs/${runId}/stream`,
      `/v1/conversations/${conversation}/stream`,
      `/v1/agents/${agentId}/messages/stream`,
      `/v1/Agents/${agentId}/Messages/Stream/`, // Express routes it the same
    ]) {
      const refused = await open(path, A);
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({
        code: 'TOO_MANY_STREAMS',
        message: expect.stringContaining('streaming.max_streams_per_key'),
        details: { max_streams_per_key: MAX },
      });
    }
    // what does not stream is not counted; nor is another key
    expect((await api(t, 'GET', '/v1/agents/', undefined, A)).status).toBe(200);
    const theirs = await open(`/v1/agents/${(await newAgent(B)).id}/messages/stream`, B);
    expect(theirs.status).toBe(200);
    theirs.close();

    // a stream closed by its client gives its slot back (the server sees the close soon after)
    first.close();
    let again = await open(`/v1/agents/${agentId}/messages/stream`, A);
    for (let i = 0; again.status === 429 && i < 200; i++) {
      await new Promise((r) => setImmediate(r));
      again = await open(`/v1/agents/${agentId}/messages/stream`, A);
    }
    expect(again.status).toBe(200);
  });

  it('which requests stream, as the routes decide it', () => {
    const rows: [string, string, unknown, boolean][] = [
      ['POST', '/v1/agents/agent-1/messages/stream', {}, true],
      ['POST', '/v1/agents/agent-1/messages', { streaming: true }, true],
      ['POST', '/v1/agents/agent-1/messages', {}, false],
      ['POST', '/v1/agents/agent-1/messages/async', { streaming: true }, false],
      ['POST', '/v1/conversations/conv-1/messages', {}, true],
      ['POST', '/v1/conversations/conv-1/messages', { streaming: false }, false],
      ['POST', '/v1/conversations/conv-1/stream', {}, true],
      ['POST', '/v1/runs/run-1/stream', undefined, true],
      ['GET', '/v1/runs/run-1/stream', undefined, false],
    ];
    for (const [method, path, body, streams] of rows)
      expect([method, path, body, answersWithStream(method, path, body)]).toEqual([
        method,
        path,
        body,
        streams,
      ]);
  });
});
