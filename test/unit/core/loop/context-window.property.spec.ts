import fc from 'fast-check';
import { buildContext, HistoryMessage } from '../../../../src/core/loop/context-builder';
import { ContextWindow } from '../../../../src/core/loop/context-window';

const chars = (t: string) => Math.ceil(t.length / 3);

/** One stored message of a random kind; steps and call ids from small pools so turns and returns meet. */
const message = fc
  .record({
    kind: fc.constantFrom(
      'user_message',
      'user_image',
      'system_message',
      'assistant_message',
      'derived',
      'tool_call_message',
      'approval_request_message',
      'tool_return_message',
      'reasoning_message',
    ),
    step: fc.constantFrom('s1', 's2', 's3', null),
    call: fc.constantFrom('c1', 'c2', 'c3'),
    text: fc.string({ maxLength: 40 }),
  })
  .map(({ kind, step, call, text }) => {
    const toolCall = { name: 'search', arguments: `{"q":"${call}"}`, tool_call_id: call };
    switch (kind) {
      case 'derived':
        return {
          message_type: 'assistant_message',
          step_id: step,
          payload: { content: text, _derived: true },
        };
      case 'tool_call_message':
      case 'approval_request_message':
        return { message_type: kind, step_id: step, payload: { tool_call: toolCall } };
      case 'tool_return_message':
        return {
          message_type: kind,
          step_id: step,
          payload: { tool_return: text, tool_call_id: call },
        };
      case 'reasoning_message':
        return { message_type: kind, step_id: step, payload: { reasoning: text } };
      case 'user_image':
        return {
          message_type: 'user_message',
          step_id: step,
          payload: {
            content: [
              { type: 'text', text },
              {
                type: 'image',
                source: { type: 'base64', media_type: 'image/png', data: 'iVBORw==' },
              },
            ],
          },
        };
      case 'user_message':
      case 'system_message':
      case 'assistant_message':
        return { message_type: kind, step_id: step, payload: { content: text } };
    }
  });

describe('ContextWindow', () => {
  it('appended in any chunks, builds what buildContext builds from the whole history', () => {
    fc.assert(
      fc.property(
        fc.array(message, { maxLength: 80 }),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 20 }),
        fc.integer({ min: 40, max: 400 }),
        fc.integer({ min: 0, max: 30 }),
        fc.nat(),
        (raw, chunks, contextWindow, reserveTokens, currentPick) => {
          const history: HistoryMessage[] = raw.map((m, i) => ({ id: `m${i}`, ...m }));
          const window = new ContextWindow(chars, contextWindow);
          let at = 0;
          for (let c = 0; at < history.length; c++) {
            const size = chunks[c % chunks.length];
            window.append(history.slice(at, at + size));
            at += size;
          }
          const users = history.filter((m) => m.message_type === 'user_message');
          const currentMessageId = users.length ? users[currentPick % users.length].id : null;
          const input = {
            system: 'You are a test.',
            blocks: [{ label: 'human', value: 'Ann' }],
            currentMessageId,
            contextWindow,
            reserveTokens,
          };
          expect(window.build(input)).toEqual(
            buildContext({ ...input, history, countTokens: chars }),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('built after every chunk (the batch moving forward, the blocks changing), builds what buildContext builds', () => {
    fc.assert(
      fc.property(
        fc.array(message, { maxLength: 80 }),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 20 }),
        fc.integer({ min: 40, max: 400 }),
        fc.integer({ min: 0, max: 30 }),
        (raw, chunks, contextWindow, reserveTokens) => {
          const history: HistoryMessage[] = raw.map((m, i) => ({ id: `m${i}`, ...m }));
          const window = new ContextWindow(chars, contextWindow);
          let blocks = [{ label: 'human', value: 'Ann' }];
          let at = 0;
          for (let c = 0; at < history.length; c++) {
            const size = chunks[c % chunks.length];
            window.append(history.slice(at, at + size));
            at += size;
            const sofar = history.slice(0, at);
            const users = sofar.filter((m) => m.message_type === 'user_message');
            if (c % 3 === 2) blocks = [{ label: 'human', value: `Ann ${c}` }];
            const input = {
              system: 'You are a test.',
              blocks,
              currentMessageId: users.length ? users[users.length - 1].id : null,
              contextWindow,
              reserveTokens,
            };
            expect(window.build(input)).toEqual(
              buildContext({ ...input, history: sofar, countTokens: chars }),
            );
            // a second build of the same step (the cached parts) builds the same
            expect(window.build(input)).toEqual(window.build(input));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('counts as held, once built, the tokens of every unit it holds (what the window cache is bounded by)', () => {
    fc.assert(
      fc.property(
        fc.array(message, { maxLength: 80 }),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 20 }),
        (raw, chunks) => {
          const history: HistoryMessage[] = raw.map((m, i) => ({ id: `m${i}`, ...m }));
          // a window nothing is evicted from, and a build that takes every unit
          const window = new ContextWindow(chars, 1e9);
          const input = {
            system: 'S',
            blocks: [],
            currentMessageId: null,
            contextWindow: 1e9,
            reserveTokens: 0,
          };
          const system = buildContext({ ...input, history: [], countTokens: chars }).tokens;
          let at = 0;
          for (let c = 0; at < history.length; c++) {
            const size = chunks[c % chunks.length];
            window.append(history.slice(at, at + size));
            at += size;
            const built = window.build(input);
            expect(window.heldTokens).toBe(built.tokens - system);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('keeps only what could still fit: a long history costs no more to build than a short one', () => {
    const window = new ContextWindow(chars, 200);
    const input = {
      system: 'S',
      blocks: [],
      currentMessageId: null,
      contextWindow: 200,
      reserveTokens: 0,
    };
    const all: HistoryMessage[] = [];
    for (let i = 0; i < 5000; i++) {
      const m = {
        id: `m${i}`,
        message_type: 'user_message',
        step_id: null,
        payload: { content: 'x'.repeat(30) },
      };
      all.push(m);
      window.append([m]);
      // the current message moves forward (past the compactions of the kept units)
      const step = { ...input, currentMessageId: i % 2 ? m.id : null };
      const built = window.build(step);
      if (i % 997 === 0)
        expect(built).toEqual(buildContext({ ...step, history: all, countTokens: chars }));
    }
    const kept = window as unknown as { prefix: number[]; start: number };
    expect(kept.prefix.length - 1 - kept.start).toBeLessThan(40);
  });

  it('evicts nothing of the current batch, however long it is', () => {
    const window = new ContextWindow(chars, 50);
    const msgs: HistoryMessage[] = Array.from({ length: 30 }, (_, i) => ({
      id: `m${i}`,
      message_type: 'user_message',
      step_id: null,
      payload: { content: 'y'.repeat(30) },
    }));
    window.append(msgs);
    const input = {
      system: 'S',
      blocks: [],
      currentMessageId: 'm3',
      contextWindow: 50,
      reserveTokens: 0,
    };
    expect(window.build(input)).toEqual(
      buildContext({ ...input, history: msgs, countTokens: chars }),
    );
  });

  it('evicts no older unit that the batch leaves room for, when a unit of the batch is skipped', () => {
    // found by the first property (seed -1420370718): the batch's tool turn does not fit and is skipped,
    // so the assistant turn before the current message still does; eviction had counted the skipped turn
    const msgs: HistoryMessage[] = [
      { message_type: 'assistant_message', payload: { content: '' } },
      { message_type: 'user_message', payload: { content: '' } },
      {
        message_type: 'tool_call_message',
        payload: { tool_call: { name: 'search', arguments: '{"q":"c1"}', tool_call_id: 'c1' } },
      },
      { message_type: 'tool_return_message', payload: { tool_return: '', tool_call_id: 'c1' } },
      { message_type: 'user_message', payload: { content: '' } },
    ].map((m, i) => ({ id: `m${i}`, step_id: 's1', ...m }));
    const window = new ContextWindow(chars, 40);
    for (const m of msgs) window.append([m]);
    const input = {
      system: 'You are a test.',
      blocks: [{ label: 'human', value: 'Ann' }],
      currentMessageId: 'm1',
      contextWindow: 40,
      reserveTokens: 0,
    };
    const built = window.build(input);
    expect(built).toEqual(buildContext({ ...input, history: msgs, countTokens: chars }));
    expect(built.messages.map((m) => m.role)).toEqual(['system', 'assistant', 'user', 'user']);
  });
});
