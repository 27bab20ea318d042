import { ProcessingRepository } from '../../src/processing/processing.repository';
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import { api, createAgent, LoopEnv, say, startLoopEnv } from '../support/processing-fixtures';

/**
 * The context windows kept in memory are bounded by the tokens they hold
 * (`processing.context_cache_tokens`), not only by their number: a tenant chooses its agents' context
 * windows (up to 10 million tokens each), so a count alone would not bound the memory. Here the budget is
 * 1,000 tokens: a window holding more is not kept (the next step reads the history again, and the model
 * still gets the whole context); windows that together hold more push the least recently used out.
 */
describe('context window cache: bounded by the tokens it holds', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let reads: jest.SpyInstance;

  beforeAll(async () => {
    env = await startLoopEnv([], { overrides: { processing: { context_cache_tokens: 1000 } } });
    ({ t, fake } = env);
    reads = jest.spyOn(t.app.get(ProcessingRepository), 'inContextMessages');
  });
  afterAll(() => env.close());
  beforeEach(() => {
    env.reset();
    reads.mockClear();
  });

  const newAgent = () => createAgent(t, fake, { include_base_tools: false });
  /** One exchange; returns how many times the conversation's history was read for it. */
  const exchange = async (agentId: string, text: string): Promise<number> => {
    const before = reads.mock.calls.length;
    fake.push({ content: `re: ${text.slice(0, 20)}` });
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say(text));
    expect(res.status).toBe(200);
    return reads.mock.calls.length - before;
  };
  /** ~`tokens` tokens of text that no other message shares (4 characters a token). */
  const text = (tag: string, tokens: number) => `${tag} ${'abcd'.repeat(tokens)}`;

  it('keeps a window that fits: the next message reads nothing', async () => {
    const id = await newAgent();
    expect(await exchange(id, 'small one')).toBe(1);
    expect(await exchange(id, 'small two')).toBe(0);
  });

  it('does not keep a window holding more than the budget; the model still sees the whole context', async () => {
    const id = await newAgent();
    expect(await exchange(id, text('big-first', 1200))).toBe(1);
    expect(await exchange(id, 'after the big one')).toBe(1);
    const prompt = JSON.stringify(fake.requests.at(-1)!.messages);
    expect(prompt).toContain('big-first');
    expect(prompt).toContain('after the big one');
  });

  it('drops the least recently used window when two together hold more than the budget', async () => {
    const a = await newAgent();
    const b = await newAgent();
    expect(await exchange(a, text('a-first', 600))).toBe(1);
    expect(await exchange(a, 'a again')).toBe(0);
    expect(await exchange(b, text('b-first', 600))).toBe(1);
    // b's window pushed a's out; b's stays
    expect(await exchange(b, 'b again')).toBe(0);
    expect(await exchange(a, 'a once more')).toBe(1);
    expect(JSON.stringify(fake.requests.at(-1)!.messages)).toContain('a-first');
  });
});
