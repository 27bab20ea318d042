import { Logger } from '@nestjs/common';
import type { Subscription } from 'rxjs';
import { RunEventsBus } from '../../../src/common/run-events';
import { startApp, TestApp } from '../../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../../support/fake-model-server';
import { api, say } from '../../support/processing-fixtures';

/**
 * A model or embedding endpoint answers an error that repeats the operator's key it was sent, not as
 * sent: a gateway passing on its upstream's JSON (PHP escapes `/` as `\/`), or the Basic credential
 * it built from the key. A tenant whose run or insert fails reads that error (the API's answer, the
 * run and its steps, the stream, run events) and the operator's log keeps it: none of them may carry
 * the key in any form.
 */
describe('security: a model provider that echoes the operator’s key in its error', () => {
  // `/` and `+`: the forms a JSON or URL encoder gives it differ from the key as sent
  const MODEL_KEY = 'sk-op/4e7a+91c2d/5b8f0a36';
  const EMBED_KEY = 'sk-embed/7c1d+20e9/a4b3f6e5';
  const jsonEscaped = (key: string) => JSON.stringify({ authorization: `Bearer ${key}` });
  const phpEscaped = (key: string) => jsonEscaped(key).replace(/\//g, '\\/');
  const basic = (key: string) => Buffer.from(`apikey:${key}`).toString('base64');
  const echoes = (key: string) => [key, phpEscaped(key), basic(key), basic(key).slice(4, -4)];
  const leaked = (text: string) =>
    [...echoes(MODEL_KEY), ...echoes(EMBED_KEY)].filter((e) => text.includes(e));

  let t: TestApp;
  let fake: FakeModelServer;
  let events: unknown[];
  let subscription: Subscription;
  let logged: jest.SpyInstance[];
  const logText = () => JSON.stringify(logged.flatMap((s) => s.mock.calls));

  beforeAll(async () => {
    fake = await startFakeModelServer();
    t = await startApp({
      env: { OPENAI_API_KEY: MODEL_KEY, EMBED_KEY },
      overrides: {
        models: {
          openai: { base_url: fake.baseUrl, max_retries: 0 },
          embeddings: {
            providers: [
              {
                name: 'fake',
                type: 'openai',
                base_url: fake.baseUrl,
                api_key_env: 'EMBED_KEY',
                models: [{ name: 'fake-embed', dimensions: 16 }],
                max_retries: 0,
              },
            ],
            default_model: 'fake/fake-embed',
          },
        },
      },
    });
    events = [];
    subscription = t.app.get(RunEventsBus).local$.subscribe((e) => events.push(e));
  });
  afterAll(async () => {
    subscription.unsubscribe();
    await t.close();
    await fake.close();
  });
  beforeEach(() => {
    fake.reset();
    events.length = 0;
    logged = (['log', 'warn', 'error', 'debug', 'verbose'] as const).map((level) =>
      jest.spyOn(Logger.prototype, level),
    );
  });
  afterEach(() => logged.forEach((s) => s.mockRestore()));

  const anAgent = async () => {
    const r = await api(t, 'POST', '/v1/agents/', {
      name: `echo-${Math.random().toString(36).slice(2)}`,
      model: 'openai/gpt-4o-mini',
    });
    expect(r.status).toBe(200);
    return r.body.id as string;
  };

  /** Sends a message, streamed and not; gathers everything the tenant is answered about the runs. */
  async function everythingTheTenantSees(id: string): Promise<string> {
    const reply = await api(t, 'POST', `/v1/agents/${id}/messages`, say('hi'));
    const runId = reply.body.details?.run_id as string;
    expect(reply.body.details).toMatchObject({ stop_reason: 'llm_api_error' });
    const stream = await api(
      t,
      'POST',
      `/v1/agents/${id}/messages`,
      say('again', { streaming: true }),
    );
    const seen = [reply.body, stream.body];
    for (const path of ['', '/steps', '/messages'])
      seen.push((await api(t, 'GET', `/v1/runs/${runId}${path}`)).body);
    seen.push((await api(t, 'GET', `/v1/agents/${id}/messages?limit=100`)).body);
    const history = await api(t, 'GET', `/v1/runs?agent_id=${id}`);
    seen.push(history.body);
    expect(fake.requests.map((r) => r.headers.authorization)).toEqual([
      `Bearer ${MODEL_KEY}`,
      `Bearer ${MODEL_KEY}`,
    ]); // the key did go out, twice
    return JSON.stringify(seen);
  }

  it.each<[string, number, (key: string) => string]>([
    [
      'a 401 passing on its upstream’s JSON, slashes escaped',
      401,
      (k) => `upstream refused ${phpEscaped(k)}`,
    ],
    ['a 401 naming the Basic credential it built', 401, (k) => `rejected: Basic ${basic(k)}`],
    [
      'a 503 (the last attempt’s error) naming the Basic credential',
      503,
      (k) => `overloaded for Basic ${basic(k)}`,
    ],
  ])('%s: the tenant and the log never see the key', async (_case, status, message) => {
    fake.push(
      { status, body: { error: { message: message(MODEL_KEY) } } },
      { status, body: { error: { message: message(MODEL_KEY) } } },
    );
    const text = await everythingTheTenantSees(await anAgent());
    expect(leaked(text)).toEqual([]);
    expect(text).toContain('[redacted:api_key]');
    expect(leaked(JSON.stringify(events))).toEqual([]);
    expect(JSON.stringify(events)).toContain('[redacted:api_key]');
    expect(leaked(logText())).toEqual([]);
    expect(logText()).toContain('[redacted:api_key]'); // the failed runs were logged, scrubbed
  });

  it.each<[string, number, (key: string) => string]>([
    ['a 400 passing on its upstream’s JSON', 400, (k) => `upstream refused ${phpEscaped(k)}`],
    ['a 503 naming the Basic credential', 503, (k) => `overloaded for Basic ${basic(k)}`],
  ])(
    'the embedding endpoint answers %s: the insert’s error carries no key',
    async (_case, status, message) => {
      const id = await anAgent();
      fake.failEmbeddings(status, {}, message(EMBED_KEY));
      const insert = await api(t, 'POST', `/v1/agents/${id}/archival-memory`, { text: 'a note' });
      expect(insert.status).toBe(status === 400 ? 502 : 503);
      expect(fake.embeddingRequests).toHaveLength(1);
      expect(leaked(JSON.stringify(insert.body))).toEqual([]);
      expect(insert.body.message).toContain('[redacted:api_key]');
      expect(leaked(logText())).toEqual([]);
    },
  );
});
