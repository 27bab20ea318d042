import { ChatMessage, ModelRequest, ScriptedTurn } from '../../../src/models/model-provider';
import { END_OF_SCRIPT, ScriptedProvider } from '../../../src/models/scripted.provider';

const messages: ChatMessage[] = [
  { role: 'system', content: 'You are scripted.' },
  { role: 'user', content: 'first question' },
  { role: 'assistant', content: 'an answer' },
  { role: 'user', content: 'what is 2+2?' },
];

const req = (o: Partial<ModelRequest> = {}): ModelRequest => ({
  llmConfig: { model: 'demo', model_endpoint_type: 'scripted' },
  messages,
  tools: [],
  toolChoice: 'auto',
  stream: false,
  batchStep: 0,
  ...o,
});

const script: ScriptedTurn[] = [
  { reasoning: 'look it up', tool_calls: [{ name: 'search', arguments: { q: 'x' } }] },
  {
    content: 'half way',
    tool_calls: [
      { name: 'a', arguments: {} },
      { name: 'b', arguments: { n: 1 } },
    ],
  },
  { content: 'done' },
];

describe('ScriptedProvider', () => {
  it.each<
    [
      string,
      Partial<ModelRequest>,
      { content: string | null; reasoning?: string | null; calls: [string, string][] },
    ]
  >([
    [
      'step 0 plays the first turn',
      { script, batchStep: 0 },
      { content: null, reasoning: 'look it up', calls: [['search', '{"q":"x"}']] },
    ],
    [
      'step 1 plays several calls',
      { script, batchStep: 1 },
      {
        content: 'half way',
        calls: [
          ['a', '{}'],
          ['b', '{"n":1}'],
        ],
      },
    ],
    ['step 2 plays a final text', { script, batchStep: 2 }, { content: 'done', calls: [] }],
    ['past the end of the script', { script, batchStep: 3 }, { content: END_OF_SCRIPT, calls: [] }],
    ['an empty script', { script: [], batchStep: 0 }, { content: END_OF_SCRIPT, calls: [] }],
    [
      'no script echoes the last user message',
      {},
      { content: 'You said: what is 2+2?', calls: [] },
    ],
    [
      'a forced tool does not change the script (the executor refuses)',
      { script, batchStep: 0, toolChoice: { name: 'other' } },
      { content: null, calls: [['search', '{"q":"x"}']] },
    ],
    [
      'toolChoice none does not change the script either',
      { script, batchStep: 1, toolChoice: 'none' },
      {
        content: 'half way',
        calls: [
          ['a', '{}'],
          ['b', '{"n":1}'],
        ],
      },
    ],
  ])('%s', async (_name, r, expected) => {
    const out = await new ScriptedProvider().complete(req(r));
    expect(out.content).toBe(expected.content);
    if (expected.reasoning !== undefined) expect(out.reasoning).toBe(expected.reasoning);
    expect(out.toolCalls.map((c) => [c.name, c.argumentsText])).toEqual(expected.calls);
    expect(out.finishReason).toBe(expected.calls.length > 0 ? 'tool_calls' : 'stop');
  });

  it('gives tool calls ids call_<step>_<i>_<suffix>, unique across runs and providers', async () => {
    const a = new ScriptedProvider();
    const b = new ScriptedProvider();
    const ids: string[] = [];
    for (const p of [a, a, b]) {
      const out = await p.complete(req({ script, batchStep: 1 }));
      ids.push(...out.toolCalls.map((c) => c.id));
    }
    expect(ids[0]).toMatch(/^call_1_0_[a-z0-9]+$/);
    expect(ids[1]).toMatch(/^call_1_1_[a-z0-9]+$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('ids come from the injected suffix', async () => {
    const out = await new ScriptedProvider(() => 'x').complete(req({ script, batchStep: 1 }));
    expect(out.toolCalls.map((c) => c.id)).toEqual(['call_1_0_x', 'call_1_1_x']);
  });

  it('reports rough usage (chars/4) and streams the text once', async () => {
    const deltas: string[] = [];
    const out = await new ScriptedProvider().complete(
      req({ script, batchStep: 2, stream: true, onTextDelta: (d) => deltas.push(d) }),
    );
    expect(deltas).toEqual(['done']);
    expect(out.usage.completion_tokens).toBe(1);
    expect(out.usage.prompt_tokens).toBeGreaterThan(0);
    expect(out.usage.total_tokens).toBe(out.usage.prompt_tokens + out.usage.completion_tokens);
  });

  it("reports the context window's prompt tokens when the request carries them", async () => {
    const out = await new ScriptedProvider().complete(
      req({ script, batchStep: 2, promptTokens: 321 }),
    );
    expect(out.usage).toEqual({ prompt_tokens: 321, completion_tokens: 1, total_tokens: 322 });
  });

  it('a cancelled request is rejected as cancelled', async () => {
    await expect(
      new ScriptedProvider().complete(req({ signal: AbortSignal.abort() })),
    ).rejects.toMatchObject({
      kind: 'cancelled',
    });
  });

  it('is deterministic: the same request gives the same turn', async () => {
    const p = new ScriptedProvider(() => 's');
    const one = await p.complete(req({ script, batchStep: 1 }));
    const two = await p.complete(req({ script, batchStep: 1 }));
    expect(two).toEqual(one);
  });
});
