/* eslint-disable @typescript-eslint/no-explicit-any */
import Letta from '@letta-ai/letta-client';
import { startApp, TestApp } from '../support/app-harness';
import { FakeModelServer, sseChunk, startFakeModelServer } from '../support/fake-model-server';

describe('messages: the loop through the fake model server', () => {
  let t: TestApp;
  let fake: FakeModelServer;
  let client: Letta;

  beforeAll(async () => {
    fake = await startFakeModelServer();
    t = await startApp({ modelBaseUrl: fake.baseUrl });
    client = new Letta({ baseURL: t.baseUrl, apiKey: 'none', maxRetries: 0 });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${t.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  async function anAgent(over: Record<string, unknown> = {}): Promise<string> {
    const res = await post('/v1/agents/', {
      name: `agent-${Math.random().toString(36).slice(2)}`,
      system: 'You are a test agent.',
      llm_config: {
        model: 'fake',
        model_endpoint_type: 'openai',
        model_endpoint: fake.baseUrl,
        context_window: 8000,
      },
      include_base_tools: true,
      ...over,
    });
    expect(res.status).toBe(200);
    return res.body.id as string;
  }

  it('a plain answer: stored, returned in Letta shape, readable in history', async () => {
    const agentId = await anAgent({ memory_blocks: [{ label: 'human', value: 'Ann' }] });
    fake.push({ content: 'Hello Ann', reasoning: 'greet' });
    const res: any = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.stop_reason).toEqual({ message_type: 'stop_reason', stop_reason: 'end_turn' });
    expect(res.messages.map((m: any) => m.message_type)).toEqual([
      'reasoning_message',
      'assistant_message',
    ]);
    expect(res.messages[1].content).toBe('Hello Ann');
    expect(res.usage).toMatchObject({ message_type: 'usage_statistics', step_count: 1 });
    expect(fake.requests[0].system).toContain('### human\nAnn');
    expect(fake.requests[0].messages.at(-1)).toEqual({ role: 'user', content: 'hi' });

    const history = (await (
      await fetch(`${t.baseUrl}/v1/agents/${agentId}/messages?order=asc`)
    ).json()) as any[];
    expect(history.map((m) => m.message_type)).toEqual([
      'user_message',
      'reasoning_message',
      'assistant_message',
    ]);
    expect(history.map((m) => m.seq_id)).toEqual([1, 2, 3]);
    expect(history[0].content).toBe('hi');
  });

  it("an assistant message in the request (Letta's MessageCreate role) joins the context as the agent's", async () => {
    const agentId = await anAgent({ include_base_tools: false });
    fake.push({ content: 'Here is the poem.' });
    const res = await post(`/v1/agents/${agentId}/messages`, {
      messages: [
        { role: 'user', content: 'promise me a poem' },
        { role: 'assistant', content: 'I promise a poem.' },
        { role: 'user', content: 'go on' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.messages.map((m: any) => m.content)).toEqual(['Here is the poem.']);
    expect(fake.requests[0].messages.slice(1)).toEqual([
      { role: 'user', content: 'promise me a poem' },
      { role: 'assistant', content: 'I promise a poem.' },
      { role: 'user', content: 'go on' },
    ]);
    const history = (await (
      await fetch(`${t.baseUrl}/v1/agents/${agentId}/messages?order=asc`)
    ).json()) as any[];
    expect(history.map((m) => `${m.message_type}:${m.content}`)).toEqual([
      'user_message:promise me a poem',
      'assistant_message:I promise a poem.',
      'user_message:go on',
      'assistant_message:Here is the poem.',
    ]);
  });

  it('send_message: one assistant_message (Letta default), its call and return with use_assistant_message false', async () => {
    const agentId = await anAgent();
    fake.push({ tool_calls: [{ name: 'send_message', arguments: { message: 'Hi there' } }] });
    const res: any = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(res.messages.map((m: any) => m.message_type)).toEqual(['assistant_message']);
    expect(res.messages[0].content).toBe('Hi there');
    const history: any[] = (
      await client.agents.messages.list(agentId, {
        order: 'asc',
        use_assistant_message: false,
      })
    ).getPaginatedItems();
    expect(history.map((m: any) => m.message_type)).toEqual([
      'user_message',
      'tool_call_message',
      'tool_return_message',
    ]);
    expect(history[1].tool_call).toMatchObject({ name: 'send_message' });
    expect(res.stop_reason.stop_reason).toBe('end_turn');
    // request_heartbeat is offered on every tool but the terminal ones: Letta's base rule makes
    // send_message exit_loop
    const schema = (name: string) =>
      fake.requests[0].tools.find((x: any) => x.function.name === name).function.parameters;
    expect(schema('send_message').properties.request_heartbeat).toBeUndefined();
    expect(schema('core_memory_append').properties.request_heartbeat).toBeDefined();
  });

  it("a model error is an error, as Letta's: the sync send answers its status, the stream an error event, the run metadata.error", async () => {
    const agentId = await anAgent();
    const providerSays = { status: 400, body: { error: { message: 'bad request from provider' } } };
    fake.push(providerSays);
    const res = await post(`/v1/agents/${agentId}/messages`, {
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'LLM_BAD_REQUEST',
      details: { stop_reason: 'llm_api_error', error_type: 'llm_bad_request' },
    });
    const run: any = await (await fetch(`${t.baseUrl}/v1/runs/${res.body.details.run_id}`)).json();
    expect(run).toMatchObject({ status: 'failed', stop_reason: 'llm_api_error' });
    // Letta Code reads metadata.error.error_type and .detail
    expect(run.metadata.error).toEqual({
      message_type: 'error_message',
      run_id: run.id,
      error_type: 'llm_bad_request',
      message: 'The request to the LLM model provider was invalid.',
      detail: expect.stringContaining('bad request from provider'),
      seq_id: null,
    });

    fake.push(providerSays);
    const raw = await fetch(`${t.baseUrl}/v1/agents/${agentId}/messages/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'y' }] }),
    });
    const frames = (await raw.text()).split('\n\n').filter(Boolean);
    expect(frames.slice(-2)[0]).toMatch(/^event: error\ndata: .*"error_type":"llm_bad_request"/);
    expect(frames.at(-1)).toBe('data: [DONE]');
    expect(frames.join()).toContain('"stop_reason":"llm_api_error"');

    // the SDK throws on it, with the LettaErrorMessage
    fake.push(providerSays);
    const stream = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'z' }],
      streaming: true,
    });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const f of stream as AsyncIterable<any>) seen.push(f.message_type);
      })(),
    ).rejects.toMatchObject({ error: { error_type: 'llm_bad_request' } });
    expect(seen).toEqual(['stop_reason', 'usage_statistics']);
  });

  /** A streamed send: its SSE frames' JSON (the `[DONE]` and error frames left out). */
  const streamSend = async (agentId: string) => {
    const res = await fetch(`${t.baseUrl}/v1/agents/${agentId}/messages/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'go' }], stream_tokens: true }),
    });
    const text = await res.text();
    return text
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)));
  };

  it('a streamed tool call with an absurd index fails the run at once (it froze the process), and the agent goes on', async () => {
    const agentId = await anAgent();
    fake.push({
      sse: [
        sseChunk(
          {
            tool_calls: [
              {
                index: 1e9,
                id: 'big',
                type: 'function',
                function: { name: 'send_message', arguments: '{"message":"hi"}' },
              },
            ],
          },
          'tool_calls',
        ),
      ],
    });
    const frames = await streamSend(agentId);
    expect(frames.find((f) => f.message_type === 'stop_reason')?.stop_reason).toBe(
      'invalid_llm_response',
    );
    fake.push({ content: 'fine again' });
    const next = await post(`/v1/agents/${agentId}/messages`, {
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(next.body.messages.map((m: any) => m.content)).toEqual(['fine again']);
  });

  it('streamed tool-call deltas Letta accepts: without an index, a name in fragments, a name repeated', async () => {
    const agentId = await anAgent();
    const call = (tc: Record<string, unknown>) => sseChunk({ tool_calls: [tc] });
    fake.push(
      {
        sse: [
          call({ id: 'ni1', type: 'function', function: { name: 'send_message', arguments: '' } }),
          call({ function: { arguments: '{"message":' } }),
          sseChunk({ tool_calls: [{ function: { arguments: '"no index"}' } }] }, 'tool_calls'),
        ],
      },
      {
        sse: [
          call({
            index: 0,
            id: 'sp1',
            type: 'function',
            function: { name: 'send_', arguments: '' },
          }),
          call({ index: 0, function: { name: 'message' } }),
          sseChunk(
            { tool_calls: [{ index: 0, function: { arguments: '{"message":"split name"}' } }] },
            'tool_calls',
          ),
        ],
      },
      {
        sse: [
          call({
            index: 0,
            id: 'rp1',
            type: 'function',
            function: { name: 'send_message', arguments: '{"message":' },
          }),
          sseChunk(
            {
              tool_calls: [
                { index: 0, function: { name: 'send_message', arguments: '"repeated"}' } },
              ],
            },
            'tool_calls',
          ),
        ],
      },
    );
    for (const said of ['no index', 'split name', 'repeated']) {
      const frames = await streamSend(agentId);
      expect(frames.find((f) => f.message_type === 'stop_reason')?.stop_reason).toBe('end_turn');
      expect(
        frames.filter((f) => f.message_type === 'assistant_message').map((f) => f.content),
      ).toEqual([said]);
    }
  });

  it("a refusal is the agent's reply (it was a 502), and a stream with CR line endings parses", async () => {
    const agentId = await anAgent();
    fake.push({
      raw: JSON.stringify({
        choices: [
          {
            message: { role: 'assistant', content: null, refusal: 'I cannot help with that.' },
            finish_reason: 'stop',
          },
        ],
      }),
    });
    const res = await post(`/v1/agents/${agentId}/messages`, {
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(res.status).toBe(200);
    expect(res.body.stop_reason.stop_reason).toBe('end_turn');
    expect(res.body.messages.map((m: any) => [m.message_type, m.content])).toEqual([
      ['assistant_message', 'I cannot help with that.'],
    ]);

    const frame = (o: unknown) => `data: ${JSON.stringify(o)}\r\r`;
    fake.push({
      sse: [
        frame(sseChunk({ content: 'carriage ' })),
        frame(sseChunk({ content: 'returns' }, 'stop')),
        'data: [DONE]\r\r',
      ],
      sseDone: false,
    });
    const frames = await streamSend(agentId);
    expect(frames.find((f) => f.message_type === 'stop_reason')?.stop_reason).toBe('end_turn');
    expect(
      frames
        .filter((f) => f.message_type === 'assistant_message')
        .map((f) => f.content)
        .join(''),
    ).toBe('carriage returns');
  });

  it('a redirect from the model endpoint is not followed: the prompt goes nowhere else, the run fails naming it', async () => {
    const other = await startFakeModelServer();
    try {
      const agentId = await anAgent();
      const location = `${other.baseUrl}/chat/completions`;
      fake.push({ status: 307, headers: { location } });
      const res = await post(`/v1/agents/${agentId}/messages`, {
        messages: [{ role: 'user', content: 'a private prompt' }],
      });
      expect(res.body.details).toMatchObject({ stop_reason: 'llm_api_error' });
      const run: any = await (
        await fetch(`${t.baseUrl}/v1/runs/${res.body.details.run_id}`)
      ).json();
      expect(run.metadata.error.detail).toContain(`307 redirecting to ${location}`);
      expect(other.requests).toHaveLength(0);
      expect(fake.requests).toHaveLength(1);
    } finally {
      await other.close();
    }
  });

  it('a stop that is not an error (max_steps) answers 200 with its stop reason and no metadata.error', async () => {
    const agentId = await anAgent();
    fake.push({
      tool_calls: [
        { name: 'conversation_search', arguments: { query: 'a', request_heartbeat: true } },
      ],
    });
    const res = await post(`/v1/agents/${agentId}/messages`, {
      messages: [{ role: 'user', content: 'x' }],
      max_steps: 1,
    });
    expect(res.status).toBe(200);
    expect(res.body.stop_reason.stop_reason).toBe('max_steps');
    const run: any = await (await fetch(`${t.baseUrl}/v1/runs/${res.body.run_id}`)).json();
    expect(run.metadata).toBeNull();
  });

  it('bad input is a clear 4xx', async () => {
    const agentId = await anAgent();
    expect((await post(`/v1/agents/${agentId}/messages`, { messages: [] })).status).toBe(400);
    expect(
      (await post(`/v1/agents/${agentId}/messages`, { messages: [{ role: 'user', content: 5 }] }))
        .body.code,
    ).toBe('VALIDATION_FAILED');
    expect(
      (
        await post(`/v1/agents/agent-00000000-0000-0000-0000-000000000000/messages`, {
          messages: [{ role: 'user', content: 'x' }],
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await post(`/v1/agents/${agentId}/messages`, {
          messages: [{ role: 'user', content: 'x' }],
          max_steps: 0,
        })
      ).status,
    ).toBe(400);
  });
});
