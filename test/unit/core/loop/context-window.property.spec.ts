import fc from 'fast-check';
import { buildContext, HistoryMessage } from '../../../../src/core/loop/context-builder';
import { ContextWindow } from '../../../../src/core/loop/context-window';

const chars = (t: string) => Math.ceil(t.length / 3);

/** One stored message of a random kind; steps and call ids from small pools so turns and returns meet. */
const message = fc
  .record({
    kind: fc.constantFrom(
      'user_message',
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

  it('keeps only what could still fit: a long history costs no more to build than a short one', () => {
    const window = new ContextWindow(chars, 200);
    const input = {
      system: 'S',
      blocks: [],
      currentMessageId: null,
      contextWindow: 200,
      reserveTokens: 0,
    };
    for (let i = 0; i < 5000; i++) {
      window.append([
        {
          id: `m${i}`,
          message_type: 'user_message',
          step_id: null,
          payload: { content: 'x'.repeat(30) },
        },
      ]);
      window.build(input);
    }
    const kept = window as unknown as { closed: unknown[]; start: number };
    expect(kept.closed.length - kept.start).toBeLessThan(40);
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
});
