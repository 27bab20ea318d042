import { ModelError, ModelRequest, ModelResponse } from '../../../src/models/model-provider';
import {
  OpenAiProvider,
  OpenAiProviderOptions,
  SseLines,
} from '../../../src/models/openai.provider';
import { MODEL_ANSWER_BOUNDS } from '../../support/input-limits';
import {
  FakeModelServer,
  FakeTurn,
  FakeUsage,
  sseChunk,
  startFakeModelServer,
} from '../../support/fake-model-server';

const KEY = 'sk-secret-key-123456';

const tool = (name: string) => ({
  type: 'function' as const,
  function: {
    name,
    description: `the ${name} tool`,
    parameters: { type: 'object', properties: {} },
  },
});

describe('OpenAiProvider against the fake model server', () => {
  let fake: FakeModelServer;
  let sleeps: number[];

  beforeAll(async () => {
    fake = await startFakeModelServer();
  });
  beforeEach(() => {
    fake.reset();
    sleeps = [];
  });
  afterAll(() => fake.close());

  const provider = (o: Partial<OpenAiProviderOptions> = {}) =>
    new OpenAiProvider({
      apiKey: KEY,
      baseUrl: fake.baseUrl,
      timeoutMs: 60_000,
      maxRetries: 3,
      bounds: MODEL_ANSWER_BOUNDS,
      sleep: (ms) => {
        sleeps.push(ms);
        return Promise.resolve();
      },
      random: () => 0.5,
      ...o,
    });

  const req = (o: Partial<ModelRequest> = {}): ModelRequest => ({
    llmConfig: { model: 'gpt-test', model_endpoint_type: 'openai', model_endpoint: fake.baseUrl },
    messages: [
      { role: 'system', content: 'You are a test agent.' },
      { role: 'user', content: 'hello' },
    ],
    tools: [],
    toolChoice: 'none',
    stream: false,
    batchStep: 0,
    ...o,
  });

  const failure = async (p: Promise<unknown>): Promise<ModelError> => {
    try {
      await p;
    } catch (e) {
      expect(e).toBeInstanceOf(ModelError);
      return e as ModelError;
    }
    throw new Error('expected the call to fail');
  };

  describe.each([false, true])('stream=%s', (stream) => {
    it('returns plain text and usage', async () => {
      fake.push({
        content: 'Hello there, how are you?',
        usage: { prompt_tokens: 11, completion_tokens: 7 },
      });
      const deltas: string[] = [];
      const r = await provider().complete(req({ stream, onTextDelta: (d) => deltas.push(d) }));
      expect(r).toMatchObject({
        content: 'Hello there, how are you?',
        toolCalls: [],
        finishReason: 'stop',
      });
      expect(r.usage).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
      if (stream) {
        expect(deltas.length).toBeGreaterThan(1);
        expect(deltas.join('')).toBe('Hello there, how are you?');
      } else {
        expect(deltas).toEqual([]);
      }
    });

    it('reassembles tool calls (arguments in fragments, raw invalid JSON kept) and reasoning', async () => {
      fake.push({
        reasoning: 'I should look this up first.',
        tool_calls: [
          { name: 'search', arguments: { query: 'weather in Paris', limit: 3 }, id: 'call_abc' },
          { name: 'broken', arguments: '{"x": 1,' },
        ],
      });
      const r = await provider().complete(
        req({ stream, tools: [tool('search'), tool('broken')], toolChoice: 'auto' }),
      );
      expect(r.toolCalls).toEqual([
        { id: 'call_abc', name: 'search', argumentsText: '{"query":"weather in Paris","limit":3}' },
        { id: expect.any(String), name: 'broken', argumentsText: '{"x": 1,' },
      ]);
      expect(r.reasoning).toBe('I should look this up first.');
      expect(r.content).toBeNull();
      expect(r.finishReason).toBe('tool_calls');
    });

    it('maps finish_reason length with nothing said to max_tokens_exceeded', async () => {
      fake.push({ content: '', finish_reason: 'length' });
      const e = await failure(provider().complete(req({ stream })));
      expect(e.kind).toBe('max_tokens_exceeded');
    });
  });

  it.each<[string, FakeTurn]>([
    ['text', { content: 'Hello there, how are you?' }],
    ['a tool call and no text', { tool_calls: [{ name: 'search', arguments: { q: 'x' } }] }],
  ])(
    "a stream tells its first chunk (%s) once, before any of its text: the run's time to first token",
    async (_name, turn) => {
      fake.push(turn);
      const seen: string[] = [];
      await provider().complete(
        req({
          stream: true,
          tools: [tool('search')],
          toolChoice: 'auto',
          onFirstChunk: () => seen.push('first chunk'),
          onTextDelta: () => seen.push('text'),
        }),
      );
      expect(seen[0]).toBe('first chunk');
      expect(seen.filter((e) => e === 'first chunk')).toHaveLength(1);
    },
  );

  it('sends the request in the OpenAI shape (tools, tool_choice, max_tokens, streaming options, key)', async () => {
    const p = provider();
    const base = req().llmConfig;
    await p.complete(req({ tools: [tool('a'), tool('b')], toolChoice: 'auto' }));
    await p.complete(req({ tools: [tool('a')], toolChoice: { name: 'a' }, stream: true }));
    await p.complete(req({ llmConfig: { ...base, max_tokens: 256, temperature: 0.2 } }));
    const [auto, forced, plain] = fake.requests;
    expect(auto.path).toBe('/v1/chat/completions');
    expect(auto.toolNames).toEqual(['a', 'b']);
    expect(auto.tool_choice).toBe('auto');
    expect(auto.body).toMatchObject({ model: 'gpt-test', messages: req().messages });
    expect(auto.body.stream).toBeUndefined();
    expect(auto.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(forced.tool_choice).toEqual({ type: 'function', function: { name: 'a' } });
    expect(forced.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(plain.body).not.toHaveProperty('tools');
    expect(plain.body).not.toHaveProperty('tool_choice');
    expect(plain.body).toMatchObject({ max_tokens: 256, temperature: 0.2 });
  });

  it('uses the configured base URL when the agent has no model_endpoint, and no header without a key', async () => {
    await provider({ apiKey: null }).complete(
      req({ llmConfig: { model: 'm', model_endpoint_type: 'openai', model_endpoint: null } }),
    );
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].headers.authorization).toBeUndefined();
  });

  it('calls only its own base URL, never the endpoint an llm_config names', async () => {
    const other = await startFakeModelServer();
    try {
      await provider().complete(
        req({
          llmConfig: { model: 'm', model_endpoint_type: 'openai', model_endpoint: other.baseUrl },
        }),
      );
      expect(other.requests).toHaveLength(0);
      expect(fake.requests).toHaveLength(1);
    } finally {
      await other.close();
    }
  });

  it.each([false, true])(
    'a response over models.max_response_bytes fails the call (stream=%s)',
    async (stream) => {
      fake.push({ content: 'x'.repeat(5000) });
      const e = await failure(
        provider({ bounds: { ...MODEL_ANSWER_BOUNDS, max_response_bytes: 2048 } }).complete(
          req({ stream }),
        ),
      );
      expect(e.kind).toBe('llm_api_error');
      expect(e.message).toBe('the model response exceeded 2048 bytes');
      expect(fake.requests).toHaveLength(1); // not retried
    },
  );

  it.each<[string, FakeTurn[], number[]]>([
    ['500 then success', [{ status: 500 }], [375]],
    [
      '500, 502, 503 then success',
      [{ status: 500 }, { status: 502 }, { status: 503 }],
      [375, 750, 1500],
    ],
    ['a dropped connection then success', [{ dropConnection: true }], [375]],
    ['429 with Retry-After seconds', [{ status: 429, headers: { 'retry-after': '7' } }], [7000]],
    ['429 with retry-after-ms', [{ status: 429, headers: { 'retry-after-ms': '1250' } }], [1250]],
    [
      '429 with an over-long Retry-After (capped)',
      [{ status: 429, headers: { 'retry-after': '3600' } }],
      [60_000],
    ],
    ['429 without Retry-After (backoff)', [{ status: 429 }], [375]],
  ])('retries: %s', async (_name, failures, expectedSleeps) => {
    fake.push(...failures, { content: 'finally' });
    const r = await provider().complete(req());
    expect(r.content).toBe('finally');
    expect(fake.requests).toHaveLength(failures.length + 1);
    expect(sleeps).toEqual(expectedSleeps);
  });

  it('honours a Retry-After HTTP date against the injected clock', async () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    fake.push(
      { status: 503, headers: { 'retry-after': 'Wed, 01 Jan 2025 00:00:05 GMT' } },
      { content: 'ok' },
    );
    await provider({ now: () => now }).complete(req());
    expect(sleeps).toEqual([5000]);
  });

  it('backoff stays bounded with jitter', async () => {
    fake.push(...Array.from({ length: 6 }, () => ({ status: 500 })), { content: 'ok' });
    await provider({ maxRetries: 6, random: () => 0.999 }).complete(req());
    expect(sleeps).toHaveLength(6);
    expect(Math.max(...sleeps)).toBeLessThanOrEqual(8000);
    expect(sleeps[5]).toBeGreaterThan(7000);
  });

  it('gives up after max_retries with llm_api_error', async () => {
    fake.push(
      ...Array.from({ length: 4 }, () => ({
        status: 500,
        body: { error: { message: 'overloaded' } },
      })),
    );
    const e = await failure(provider().complete(req()));
    expect(e.kind).toBe('llm_api_error');
    expect(e.status).toBe(500);
    expect(e.message).toMatch(/overloaded/);
    expect(e.message).toMatch(/4 attempts/);
    expect(fake.requests).toHaveLength(4);
  });

  it('a 4xx ends at once with llm_api_error and the provider message', async () => {
    fake.push({
      status: 400,
      body: {
        error: { message: "Invalid schema for function 'x'", type: 'invalid_request_error' },
      },
    });
    const e = await failure(provider().complete(req()));
    expect(e).toMatchObject({
      kind: 'llm_api_error',
      status: 400,
      message: "Invalid schema for function 'x'",
    });
    expect(fake.requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it.each<[number, boolean]>([
    [301, false],
    [302, false],
    [307, false],
    [308, true],
  ])(
    'a %s redirect is not followed: llm_api_error naming the Location, not retried (stream=%s)',
    async (status, stream) => {
      const other = await startFakeModelServer();
      try {
        const location = `${other.baseUrl}/chat/completions`;
        fake.push({ status, headers: { location } });
        const e = await failure(provider().complete(req({ stream })));
        expect(e).toMatchObject({ kind: 'llm_api_error', status });
        expect(e.message).toContain(`answered ${status} redirecting to ${location}`);
        expect(e.message).toContain('redirects are not followed');
        expect(other.requests).toHaveLength(0);
        expect(fake.requests).toHaveLength(1);
        expect(sleeps).toEqual([]);
      } finally {
        await other.close();
      }
    },
  );

  it.each<[string, FakeTurn, boolean]>([
    [
      "OpenAI's code",
      { status: 400, body: { error: { message: 'too long', code: 'context_length_exceeded' } } },
      false,
    ],
    [
      "vLLM's wording",
      {
        status: 400,
        body: {
          message:
            "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
        },
      },
      true,
    ],
    [
      "a 413 with llama.cpp's wording",
      { status: 413, body: { detail: 'the request exceeds the available context size' } },
      false,
    ],
    [
      'an error in a 200 body',
      {
        raw: JSON.stringify({
          error: { message: 'Your input exceeds the context window of this model.' },
        }),
      },
      false,
    ],
    [
      'an error chunk of a stream, before any text',
      { sse: [{ error: { message: 'Input tokens exceed the configured limit of 4096 tokens' } }] },
      true,
    ],
  ])(
    'a context-window overflow is context_window_exceeded, at once: %s',
    async (_name, turn, stream) => {
      fake.push(turn);
      const e = await failure(provider().complete(req({ stream })));
      expect(e.kind).toBe('context_window_exceeded');
      expect(fake.requests).toHaveLength(1);
    },
  );

  it('another 400 stays llm_api_error', async () => {
    fake.push({ status: 400, body: { error: { message: 'Invalid value for temperature' } } });
    expect((await failure(provider().complete(req()))).kind).toBe('llm_api_error');
  });

  it('an unreachable endpoint is llm_api_error after retries', async () => {
    const gone = await startFakeModelServer();
    const url = gone.baseUrl;
    await gone.close();
    const e = await failure(provider({ maxRetries: 1, baseUrl: url }).complete(req()));
    expect(e.kind).toBe('llm_api_error');
    expect(e.message).toMatch(/cannot reach the model endpoint/);
    expect(sleeps).toHaveLength(1);
  });

  it('times out a held call (timer fired by the test) and retries it', async () => {
    const timers: (() => void)[] = [];
    const p = provider({
      maxRetries: 1,
      startTimer: (_ms, fire) => {
        timers.push(fire);
        return () => undefined;
      },
    });
    fake.push({ delayMs: 60_000, content: 'too late' }, { delayMs: 60_000, content: 'too late' });
    const call = failure(p.complete(req()));
    await fake.waitForRequests(1);
    timers[0]();
    await fake.waitForRequests(2);
    timers[1]();
    const e = await call;
    expect(e.kind).toBe('llm_api_error');
    expect(e.message).toMatch(/timed out after 60 s/);
  });

  it('passes a per-request timeout to the timer', async () => {
    const seen: number[] = [];
    await provider({
      startTimer: (ms) => {
        seen.push(ms);
        return () => undefined;
      },
    }).complete(req({ timeoutMs: 1234 }));
    expect(seen).toEqual([1234]);
  });

  it('cancellation mid-call is `cancelled` and never retried', async () => {
    fake.push({ delayMs: 60_000, content: 'never' });
    const ac = new AbortController();
    const call = failure(provider().complete(req({ signal: ac.signal, stream: true })));
    await fake.waitForRequests(1);
    ac.abort();
    const e = await call;
    expect(e.kind).toBe('cancelled');
    expect(fake.requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('cancellation during the backoff sleep is `cancelled`', async () => {
    const ac = new AbortController();
    const p = provider({
      sleep: (_ms, signal) =>
        new Promise((_resolve, reject) =>
          signal?.addEventListener('abort', () => reject(new Error('aborted'))),
        ),
    });
    fake.push({ status: 500 });
    const call = failure(p.complete(req({ signal: ac.signal })));
    await fake.waitForRequests(1);
    ac.abort();
    expect((await call).kind).toBe('cancelled');
    expect(fake.requests).toHaveLength(1);
  });

  it("waits for the provider's rate before every attempt, retries too", async () => {
    const events: string[] = [];
    fake.respond(() => {
      events.push('sent');
      return events.length < 6 ? { status: 429 } : { content: 'ok' };
    });
    const p = provider({
      admit: () => {
        events.push('admitted');
        return Promise.resolve();
      },
    });
    expect((await p.complete(req())).content).toBe('ok');
    expect(events).toEqual(['admitted', 'sent', 'admitted', 'sent', 'admitted', 'sent']);
  });

  it('cancellation while waiting for the rate is `cancelled`, and sends nothing', async () => {
    const ac = new AbortController();
    const p = provider({
      admit: (signal) =>
        new Promise((_resolve, reject) =>
          signal?.addEventListener('abort', () => reject(new Error('aborted'))),
        ),
    });
    const call = failure(p.complete(req({ signal: ac.signal })));
    ac.abort();
    expect((await call).kind).toBe('cancelled');
    expect(fake.requests).toHaveLength(0);
  });

  it('an already-cancelled request sends nothing', async () => {
    const e = await failure(provider().complete(req({ signal: AbortSignal.abort() })));
    expect(e.kind).toBe('cancelled');
    expect(fake.requests).toHaveLength(0);
  });

  it.each<[string, FakeTurn, boolean]>([
    ['a body that is not JSON', { raw: 'this is not json' }, false],
    ['no choices', { raw: '{"id":"x","choices":[]}' }, false],
    ['an empty answer', { content: '' }, false],
    ['an empty stream', { raw: '' }, true],
    [
      'a tool call without a name',
      {
        raw: '{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}}]}',
      },
      false,
    ],
  ])('invalid_llm_response: %s', async (_name, turn, stream) => {
    fake.push(turn);
    const e = await failure(provider().complete(req({ stream })));
    expect(e.kind).toBe('invalid_llm_response');
    expect(fake.requests).toHaveLength(1);
  });

  it('estimates usage when the provider sends none', async () => {
    fake.push({
      raw: '{"choices":[{"message":{"role":"assistant","content":"12345678"},"finish_reason":"stop"}]}',
    });
    const r = await provider().complete(req());
    expect(r.usage.completion_tokens).toBe(2);
    expect(r.usage.prompt_tokens).toBeGreaterThan(0);
    expect(r.usage.total_tokens).toBe(r.usage.prompt_tokens + 2);
  });

  describe.each([false, true])('usage the endpoint reports, made whole (stream=%s)', (stream) => {
    it.each<[string, FakeUsage, (u: ModelResponse['usage']) => void]>([
      [
        'a negative count is estimated',
        { prompt_tokens: -5, completion_tokens: 1, total_tokens: -4 },
        (u) => {
          expect(u.prompt_tokens).toBeGreaterThan(0);
          expect(u.completion_tokens).toBe(1);
          expect(u.total_tokens).toBe(u.prompt_tokens + 1);
        },
      ],
      [
        'fractions are rounded',
        { prompt_tokens: 10.5, completion_tokens: 2.4, total_tokens: 12.9 },
        (u) => expect(u).toEqual({ prompt_tokens: 11, completion_tokens: 2, total_tokens: 13 }),
      ],
      [
        'an astronomical count is cut to 1e12',
        { prompt_tokens: 1e308, completion_tokens: 3, total_tokens: 1e308 },
        (u) =>
          expect(u).toEqual({
            prompt_tokens: 1e12,
            completion_tokens: 3,
            total_tokens: 1e12 + 3,
          }),
      ],
      [
        'a total below its parts is their sum',
        { prompt_tokens: 900, completion_tokens: 900, total_tokens: 0 },
        (u) =>
          expect(u).toEqual({ prompt_tokens: 900, completion_tokens: 900, total_tokens: 1800 }),
      ],
      [
        'a total above its parts is kept (reasoning tokens)',
        { prompt_tokens: 10, completion_tokens: 5, total_tokens: 40 },
        (u) => expect(u).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 40 }),
      ],
      [
        "the cached and reasoning tokens of OpenAI's details are kept (0 too: reported)",
        {
          prompt_tokens: 100,
          completion_tokens: 30,
          prompt_tokens_details: { cached_tokens: 64, audio_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
        },
        (u) =>
          expect(u).toEqual({
            prompt_tokens: 100,
            completion_tokens: 30,
            total_tokens: 130,
            cached_input_tokens: 64,
            reasoning_tokens: 0,
          }),
      ],
      [
        'details that are not counts are left out',
        {
          prompt_tokens: 10,
          completion_tokens: 5,
          prompt_tokens_details: { cached_tokens: -3 },
          completion_tokens_details: { reasoning_tokens: 'many' as unknown as number },
        },
        (u) => expect(u).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }),
      ],
      [
        'details are rounded and cut as the other counts',
        {
          prompt_tokens: 10,
          completion_tokens: 5,
          prompt_tokens_details: { cached_tokens: 2.6 },
          completion_tokens_details: { reasoning_tokens: 1e308 },
        },
        (u) => expect(u).toMatchObject({ cached_input_tokens: 3, reasoning_tokens: 1e12 }),
      ],
    ])('%s', async (_name, usage, check) => {
      fake.push({ content: 'hello', usage });
      const r = await provider().complete(req({ stream }));
      for (const v of Object.values(r.usage)) {
        expect(Number.isInteger(v)).toBe(true);
        expect(v).toBeGreaterThanOrEqual(0);
      }
      check(r.usage);
    });
  });

  describe("a refusal is the model's reply", () => {
    const refusing = (message: Record<string, unknown>) => ({
      raw: JSON.stringify({
        choices: [{ message: { role: 'assistant', ...message }, finish_reason: 'stop' }],
      }),
    });

    it.each<[string, Record<string, unknown>, string]>([
      [
        'content null',
        { content: null, refusal: 'I cannot help with that.' },
        'I cannot help with that.',
      ],
      ['content empty', { content: '', refusal: 'No.' }, 'No.'],
      ['a refusal part', { content: [{ type: 'refusal', refusal: 'Not that.' }] }, 'Not that.'],
      ['content wins when there is some', { content: 'Sure.', refusal: 'ignored' }, 'Sure.'],
    ])('%s', async (_name, message, said) => {
      fake.push(refusing(message));
      const r = await provider().complete(req());
      expect(r.content).toBe(said);
      expect(r.toolCalls).toEqual([]);
    });

    it('streamed as delta.refusal, handed on as text deltas', async () => {
      fake.push({
        sse: [
          sseChunk({ role: 'assistant', refusal: 'I cannot ' }),
          sseChunk({ refusal: 'do that.' }, 'stop'),
        ],
      });
      const deltas: string[] = [];
      const r = await provider().complete(
        req({ stream: true, onTextDelta: (d) => deltas.push(d) }),
      );
      expect(r.content).toBe('I cannot do that.');
      expect(deltas).toEqual(['I cannot ', 'do that.']);
    });
  });

  it.each<[string, string]>([
    ['CR', '\r'],
    ['CRLF', '\r\n'],
    ['LF', '\n'],
  ])('an SSE stream with %s line endings parses', async (_name, eol) => {
    const frame = (o: unknown) => `data: ${JSON.stringify(o)}${eol}${eol}`;
    fake.push({
      sse: [
        `: a comment${eol}${eol}`,
        frame(sseChunk({ content: 'Hello ' })),
        frame(sseChunk({ content: 'there' }, 'stop')),
        `data: [DONE]${eol}${eol}`,
      ],
      sseDone: false,
    });
    const r = await provider().complete(req({ stream: true }));
    expect(r.content).toBe('Hello there');
  });

  describe('streamed tool-call deltas', () => {
    const delta = (index: unknown, id: string, name: string, args: string) =>
      sseChunk({
        tool_calls: [{ index, id, type: 'function', function: { name, arguments: args } }],
      });
    const streamed = () =>
      provider().complete(req({ stream: true, tools: [tool('a'), tool('b')], toolChoice: 'auto' }));

    it.each<[string, unknown]>([
      ['huge', 1e9],
      ['one past the bound', MODEL_ANSWER_BOUNDS.max_tool_call_index + 1],
      ['negative', -1],
      ['fractional', 0.5],
      ['a string', '0'],
    ])('an index that is %s is invalid_llm_response, at once', async (_name, index) => {
      fake.push({ sse: [delta(index, 'c1', 'a', '{}'), sseChunk({}, 'tool_calls')] });
      const e = await failure(streamed());
      expect(e.kind).toBe('invalid_llm_response');
      expect(e.message).toMatch(
        /tool call with index .* \(a whole number from 0 to 1023 expected: models.max_tool_call_index\)/,
      );
    });

    const bare = (o: { id?: string; name?: string; args?: string; index?: number }) =>
      sseChunk({
        tool_calls: [
          {
            ...(o.index === undefined ? {} : { index: o.index }),
            ...(o.id ? { id: o.id, type: 'function' } : {}),
            function: {
              ...(o.name === undefined ? {} : { name: o.name }),
              ...(o.args === undefined ? {} : { arguments: o.args }),
            },
          },
        ],
      });

    it.each<
      [string, Record<string, unknown>[], { id: string; name: string; argumentsText: string }[]]
    >([
      [
        'deltas without an index continue the current call (Letta)',
        [bare({ id: 'n1', name: 'a', args: '' }), bare({ args: '{"q":' }), bare({ args: '"x"}' })],
        [{ id: 'n1', name: 'a', argumentsText: '{"q":"x"}' }],
      ],
      [
        'a delta without an index continues the call an indexed one started',
        [bare({ index: 0, id: 'm1', name: 'a', args: '{"q":' }), bare({ args: '1}' })],
        [{ id: 'm1', name: 'a', argumentsText: '{"q":1}' }],
      ],
      [
        'whole calls without an index, each with its own id, stay apart',
        [bare({ id: 'w1', name: 'a', args: '{}' }), bare({ id: 'w2', name: 'b', args: '{"n":2}' })],
        [
          { id: 'w1', name: 'a', argumentsText: '{}' },
          { id: 'w2', name: 'b', argumentsText: '{"n":2}' },
        ],
      ],
      [
        'a name split across deltas is joined',
        [
          bare({ index: 0, id: 's1', name: 'send_', args: '' }),
          bare({ index: 0, name: 'message' }),
          bare({ index: 0, args: '{"message":"hi"}' }),
        ],
        [{ id: 's1', name: 'send_message', argumentsText: '{"message":"hi"}' }],
      ],
      [
        'a name repeated whole in every delta is kept once',
        [
          bare({ index: 0, id: 'r1', name: 'send_message', args: '{"message":' }),
          bare({ index: 0, name: 'send_message', args: '"rep"}' }),
        ],
        [{ id: 'r1', name: 'send_message', argumentsText: '{"message":"rep"}' }],
      ],
    ])('%s', async (_name, frames, expected) => {
      fake.push({ sse: [...frames, sseChunk({}, 'tool_calls')] });
      expect((await streamed()).toolCalls).toEqual(expected);
    });

    it('calls are ordered by their index, gaps or not, whatever order their deltas came in', async () => {
      fake.push({
        sse: [
          delta(MODEL_ANSWER_BOUNDS.max_tool_call_index, 'c3', 'b', '{"n":3}'),
          delta(5, 'c2', 'a', '{"n":'),
          delta(0, 'c1', 'b', '{"n":1}'),
          sseChunk({ tool_calls: [{ index: 5, function: { arguments: '2}' } }] }, 'tool_calls'),
        ],
      });
      const r = await streamed();
      expect(r.toolCalls).toEqual([
        { id: 'c1', name: 'b', argumentsText: '{"n":1}' },
        { id: 'c2', name: 'a', argumentsText: '{"n":2}' },
        { id: 'c3', name: 'b', argumentsText: '{"n":3}' },
      ]);
    });
  });

  it.each<[string, FakeTurn[]]>([
    [
      'a 401 that echoes the key',
      [{ status: 401, body: { error: { message: `Incorrect API key provided: ${KEY}.` } } }],
    ],
    [
      'retries exhausted on 500s echoing the key',
      Array.from({ length: 4 }, () => ({
        status: 500,
        body: { error: { message: `bad ${KEY}` } },
      })),
    ],
    [
      'an error inside a 200 body',
      [{ raw: JSON.stringify({ error: { message: `key ${KEY} revoked` } }) }],
    ],
  ])('the API key never appears in an error: %s', async (_name, turns) => {
    fake.push(...turns);
    const e = await failure(provider().complete(req()));
    expect(e.kind).toBe('llm_api_error');
    expect(`${e.message} ${e.stack} ${JSON.stringify(e)}`).not.toContain(KEY);
    expect(e.message).toContain('[redacted:api_key]');
  });

  // `/` and `+`: the forms a JSON or URL encoder gives it differ from the key as sent
  const SLASHED = 'sk-proj/9f8e7d6c+5b4a3210';
  const escaped = JSON.stringify({ authorization: `Bearer ${SLASHED}` }).replace(/\//g, '\\/');
  const basic = Buffer.from(`apikey:${SLASHED}`).toString('base64');
  it.each<[string, FakeTurn, string]>([
    [
      'JSON-escaped inside its message (a gateway passing on its upstream’s answer)',
      { status: 401, body: { error: { message: `upstream refused ${escaped}` } } },
      escaped.slice(25, -2),
    ],
    [
      'as base64 (the Basic credential it built)',
      { status: 401, body: { error: { message: `rejected: Basic ${basic}` } } },
      basic.slice(4, -4),
    ],
    [
      'across the 500th character of an error text (scrubbed before the cut)',
      { status: 400, body: `${'x'.repeat(480)} ${SLASHED}` },
      SLASHED.slice(0, 8),
    ],
  ])('nor the key %s', async (_name, turn, echo) => {
    fake.push(turn);
    const e = await failure(provider({ apiKey: SLASHED }).complete(req()));
    expect(`${e.message} ${JSON.stringify(e)}`).not.toContain(echo);
    expect(e.message).toContain('[redacted:api_key]');
  });
});

describe('SseLines', () => {
  it('splits at CRLF, LF and CR, whatever the reads cut', () => {
    const text = 'a\r\nb\nc\rd\r\r\ne';
    const whole = new SseLines();
    expect([...whole.push(text), whole.end()]).toEqual(['a', 'b', 'c', 'd', '', 'e']);
    // every cut of the same text into two reads gives the same lines
    for (let i = 0; i <= text.length; i++) {
      const s = new SseLines();
      expect([...s.push(text.slice(0, i)), ...s.push(text.slice(i)), s.end()]).toEqual([
        'a',
        'b',
        'c',
        'd',
        '',
        'e',
      ]);
    }
  });

  it('holds a CR last (its LF may follow), and ends a line left without an ending', () => {
    const s = new SseLines();
    expect(s.push('data: x\r')).toEqual([]);
    expect(s.push('\ndata: y\r')).toEqual(['data: x']);
    expect(s.end()).toBe('data: y');
  });
});
