import {
  newerHalf,
  planCompaction,
  summarizerMessages,
} from '../../../../src/core/loop/compaction';
import type { HistoryMessage } from '../../../../src/core/loop/context-builder';

/** `u` a user message, `a` an assistant text, `c` a tool call, `r` its return (same step as the call). */
function history(spec: string): HistoryMessage[] {
  return [...spec].map((k, i) => {
    const id = `m${i}`;
    if (k === 'u')
      return { id, message_type: 'user_message', step_id: null, payload: { content: id } };
    if (k === 'a')
      return { id, message_type: 'assistant_message', step_id: `s${i}`, payload: { content: id } };
    if (k === 'c')
      return {
        id,
        message_type: 'tool_call_message',
        step_id: `s${i}`,
        payload: { tool_call: { tool_call_id: `t${i}`, name: 'lookup', arguments: '{}' } },
      };
    return {
      id,
      message_type: 'tool_return_message',
      step_id: `s${i - 1}`,
      payload: { tool_call_id: `t${i - 1}`, tool_return: 'found' },
    };
  });
}

describe('planCompaction', () => {
  it.each([
    // spec, mode, max, summarized ids, dropped, first kept id
    ['uaua', 'sliding_window', 100, ['m0', 'm1'], 0, 'm2'],
    ['uauaua', 'sliding_window', 100, ['m0', 'm1', 'm2', 'm3'], 0, 'm4'],
    ['ucruaua', 'sliding_window', 100, ['m0', 'm1', 'm2', 'm3', 'm4'], 0, 'm5'],
    ['uauaua', 'all', 100, ['m0', 'm1', 'm2', 'm3', 'm4', 'm5'], 0, null],
    ['uauaua', 'sliding_window', 2, ['m2', 'm3'], 2, 'm4'],
  ] as const)('%s %s max %d', (spec, mode, max, summarized, dropped, kept) => {
    const plan = planCompaction(history(spec), mode, max)!;
    expect(plan.summarized.map((m) => m.id)).toEqual(summarized);
    expect(plan.dropped).toBe(dropped);
    expect(plan.keepFrom?.id ?? null).toBe(kept);
  });

  it('nothing to summarize: no user message to cut at, or nothing at all', () => {
    expect(planCompaction(history('ucra'), 'sliding_window', 100)).toBeNull();
    expect(planCompaction([], 'all', 100)).toBeNull();
  });

  it('the summarizer gets the earlier summary and a transcript with tool calls and results', () => {
    const [system, user] = summarizerMessages(history('ucra'), 'before', null);
    expect(system.role).toBe('system');
    expect(user.content).toBe(
      '(summary of what came before)\nbefore\n\nuser: m0\n\nassistant called lookup({})\n\ntool result: found\n\nassistant: m3',
    );
  });
});

describe('newerHalf (what the summarizer reads after a context-window overflow)', () => {
  it.each([
    ['uauaua', ['m4', 'm5']],
    ['uaua', ['m2', 'm3']],
    ['ucruaua', ['m5', 'm6']],
    ['uucra', []],
    ['uauuu', ['m3', 'm4']],
    ['ua', []],
    ['u', []],
    ['', []],
  ] as const)('%s → %j (cut where a turn starts, in the newer half)', (spec, ids) => {
    expect(newerHalf(history(spec)).map((m) => m.id)).toEqual(ids);
  });
});
