import { FakeModelServer, startFakeModelServer } from '../../support/fake-model-server';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- free-form response JSON
const json = (res: Response): Promise<any> => res.json();

const post = (fake: FakeModelServer, body: unknown) =>
  fetch(`${fake.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify(body),
  });

const sys = (text: string) => [
  { role: 'system', content: text },
  { role: 'user', content: 'hi' },
];

describe('fake model server', () => {
  let fake: FakeModelServer;
  beforeAll(async () => {
    fake = await startFakeModelServer();
  });
  afterEach(() => fake.reset());
  afterAll(() => fake.close());

  it('serves queued turns in order, then "ok", and records requests', async () => {
    fake.push({ content: 'first' }, { tool_calls: [{ name: 'f', arguments: { a: 1 } }] });
    const tools = [{ type: 'function', function: { name: 'f', description: '', parameters: {} } }];
    const r1 = await json(
      await post(fake, { model: 'm', messages: sys('s'), tools, tool_choice: 'auto' }),
    );
    const r2 = await json(await post(fake, { model: 'm', messages: sys('s') }));
    const r3 = await json(await post(fake, { model: 'm', messages: sys('s') }));
    expect(r1.choices[0].message.content).toBe('first');
    expect(r2.choices[0].message.tool_calls[0].function).toEqual({
      name: 'f',
      arguments: '{"a":1}',
    });
    expect(r2.choices[0].finish_reason).toBe('tool_calls');
    expect(r3.choices[0].message.content).toBe('ok');
    expect(fake.requests).toHaveLength(3);
    expect(fake.requests[0].toolNames).toEqual(['f']);
    expect(fake.requests[0].tool_choice).toBe('auto');
    expect(fake.requests[0].headers.authorization).toBe('Bearer sk-test');
  });

  it('routes keyed turns by system prompt substring', async () => {
    fake.push([{ content: 'for A' }], { key: 'agent A' });
    fake.push([{ content: 'for B' }], { key: 'agent B' });
    const b = await json(await post(fake, { messages: sys('I am agent B') }));
    const a = await json(await post(fake, { messages: sys('I am agent A') }));
    expect([a.choices[0].message.content, b.choices[0].message.content]).toEqual([
      'for A',
      'for B',
    ]);
    expect(fake.requests.map((r) => r.key)).toEqual(['agent B', 'agent A']);
  });

  it('uses respond(fn) after the queues', async () => {
    fake.respond((req) => ({ content: `echo ${req.messages.length}` }));
    const r = await json(await post(fake, { messages: sys('x') }));
    expect(r.choices[0].message.content).toBe('echo 2');
  });

  it('streams content deltas, tool-call fragments and usage', async () => {
    fake.push({
      content: 'hello world',
      tool_calls: [{ name: 'g', arguments: '{"x": "abcdef"}' }],
    });
    const res = await post(fake, {
      messages: sys('x'),
      stream: true,
      stream_options: { include_usage: true },
    });
    const text = await res.text();
    const frames = text
      .split('\n\n')
      .filter(Boolean)
      .map((f) => f.replace(/^data: /, ''));
    expect(frames[frames.length - 1]).toBe('[DONE]');
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f));
    const content = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    const args = chunks
      .map((c) => c.choices[0]?.delta?.tool_calls?.[0]?.function?.arguments ?? '')
      .join('');
    expect(content).toBe('hello world');
    expect(args).toBe('{"x": "abcdef"}');
    expect(chunks.filter((c) => c.choices[0]?.delta?.tool_calls).length).toBeGreaterThan(2);
    expect(chunks[chunks.length - 1].usage.total_tokens).toBeGreaterThan(0);
  });

  it('answers error statuses with headers and body', async () => {
    fake.push({
      status: 429,
      headers: { 'retry-after': '2' },
      body: { error: { message: 'slow down' } },
    });
    const res = await post(fake, { messages: sys('x') });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('2');
    expect((await json(res)).error.message).toBe('slow down');
  });

  it('releases a held response when the client aborts', async () => {
    fake.push({ delayMs: 60_000, content: 'late' });
    const ac = new AbortController();
    const p = fetch(`${fake.baseUrl}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ messages: sys('x') }),
      signal: ac.signal,
    });
    await fake.waitForRequests(1);
    ac.abort();
    await expect(p).rejects.toThrow();
  });
});
