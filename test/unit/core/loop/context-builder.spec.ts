import {
  buildContext,
  HistoryMessage,
  renderSystemPrompt,
  toChatUnits,
} from '../../../../src/core/loop/context-builder';

let n = 0;
const m = (
  message_type: string,
  payload: Record<string, unknown>,
  step_id: string | null = null,
): HistoryMessage => ({ id: `m${++n}`, message_type, step_id, payload });
const user = (content: string) => m('user_message', { content });
const call = (step: string, id: string, name = 'search') =>
  m('tool_call_message', { tool_call: { name, arguments: '{"q":1}', tool_call_id: id } }, step);
const ret = (step: string, id: string, value = 'r') =>
  m('tool_return_message', { tool_return: value, status: 'success', tool_call_id: id }, step);
const chars = (t: string) => t.length;

describe('renderSystemPrompt', () => {
  it('renders memory blocks as ### sections after the system prompt', () => {
    expect(
      renderSystemPrompt('You are X.', [
        { label: 'human', value: 'Ann' },
        { label: 'persona', value: 'kind' },
      ]),
    ).toBe('You are X.\n\n### human\nAnn\n\n### persona\nkind');
  });
});

describe('toChatUnits', () => {
  it('groups an assistant turn with its tool results, dropping calls without a result', () => {
    const units = toChatUnits([
      user('hi'),
      m('reasoning_message', { reasoning: 'think' }, 's1'),
      m('assistant_message', { content: 'hello' }, 's1'),
      call('s1', 'c1'),
      call('s1', 'c2'),
      m('assistant_message', { content: 'said', _derived: true }, 's1'),
      ret('s1', 'c1', 'found'),
    ]);
    expect(units.map((u) => u.messages)).toEqual([
      [{ role: 'user', content: 'hi' }],
      [
        {
          role: 'assistant',
          content: 'hello',
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'search', arguments: '{"q":1}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'found' },
      ],
    ]);
  });

  it('a parked call (tool_call + approval_request) resumed later appears once, with its result', () => {
    const units = toChatUnits([
      user('pay'),
      call('s1', 'c1', 'pay'),
      m(
        'approval_request_message',
        { tool_call: { name: 'pay', arguments: '{}', tool_call_id: 'c1' } },
        's1',
      ),
      m('approval_response_message', { approvals: [] }),
      ret('s1', 'c1', 'paid'),
      m('assistant_message', { content: 'done' }, 's2'),
    ]);
    expect(units).toHaveLength(3);
    const turn = units[1].messages;
    expect(turn[0]).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'c1' }] });
    expect(turn[1]).toEqual({ role: 'tool', tool_call_id: 'c1', content: 'paid' });
  });

  it("one approval request listing the turn's parked calls (Letta's tool_calls) gives each call once", () => {
    const pay = (id: string) => ({ name: 'pay', arguments: '{}', tool_call_id: id });
    const units = toChatUnits([
      user('pay both'),
      m('tool_call_message', { tool_call: pay('c1'), _held: true }, 's1'),
      m(
        'approval_request_message',
        { tool_call: pay('c1'), tool_calls: [pay('c1'), pay('c2')] },
        's1',
      ),
      ret('s1', 'c1', 'paid 1'),
      ret('s1', 'c2', 'paid 2'),
    ]);
    expect(units).toHaveLength(2);
    expect(units[1].messages.map((x) => x.role)).toEqual(['assistant', 'tool', 'tool']);
    expect(units[1].messages[0]).toMatchObject({
      role: 'assistant',
      tool_calls: [{ id: 'c1' }, { id: 'c2' }],
    });
  });
});

describe('toChatUnits with a provider that reuses tool_call ids', () => {
  it('a call_0 in each step is a call of its own turn, each with its own result', () => {
    const units = toChatUnits([
      user('look'),
      call('s1', 'call_0'),
      ret('s1', 'call_0', 'first'),
      call('s2', 'call_0'),
      call('s2', 'call_0_2'),
      ret('s2', 'call_0', 'second'),
      ret('s2', 'call_0_2', 'third'),
      call('s3', 'call_0'),
      ret('s3', 'call_0', 'fourth'),
    ]);
    expect(
      units.map((u) => u.messages.map((x) => (x.role === 'tool' ? x.tool_call_id : x.role))),
    ).toEqual([
      ['user'],
      ['assistant', 'call_0'],
      ['assistant', 'call_0', 'call_0_2'],
      ['assistant', 'call_0'],
    ]);
    expect(units.slice(1).flatMap((u) => u.messages.slice(1).map((x) => x.content))).toEqual([
      'first',
      'second',
      'third',
      'fourth',
    ]);
  });

  it('a parked call_0 is offered once in its step though an earlier step had a call_0 too', () => {
    const pay = { name: 'pay', arguments: '{}', tool_call_id: 'call_0' };
    const units = toChatUnits([
      user('look, then pay'),
      call('s1', 'call_0'),
      ret('s1', 'call_0', 'looked'),
      m('tool_call_message', { tool_call: pay, _held: true }, 's2'),
      m('approval_request_message', { tool_call: pay, tool_calls: [pay] }, 's2'),
      m('approval_response_message', { approvals: [] }),
      ret('s2', 'call_0', 'paid'),
    ]);
    expect(units.map((u) => u.messages)).toEqual([
      [{ role: 'user', content: 'look, then pay' }],
      [
        expect.objectContaining({ role: 'assistant', tool_calls: [expect.any(Object)] }),
        { role: 'tool', tool_call_id: 'call_0', content: 'looked' },
      ],
      [
        expect.objectContaining({
          role: 'assistant',
          tool_calls: [
            expect.objectContaining({
              id: 'call_0',
              function: expect.objectContaining({ name: 'pay' }),
            }),
          ],
        }),
        { role: 'tool', tool_call_id: 'call_0', content: 'paid' },
      ],
    ]);
  });
});

describe('buildContext', () => {
  const history = [user('old one'), user('old two'), user('current message')];
  const rows: [string, number, string[]][] = [
    ['everything fits', 1000, ['old one', 'old two', 'current message']],
    [
      'only the newest history fits',
      100 + 'system'.length + 4 + 15 + 4 + 7,
      ['old two', 'current message'],
    ],
    ['the current message is kept even when nothing fits', 0, ['current message']],
  ];
  it.each(rows)('%s', (_name, window, expected) => {
    const { messages: out, tokens } = buildContext({
      system: 'system',
      blocks: [],
      history,
      currentMessageId: history[2].id,
      contextWindow: window,
      reserveTokens: 100,
      countTokens: chars,
    });
    expect(out[0]).toEqual({ role: 'system', content: 'system' });
    expect(out.slice(1).map((c) => c.content)).toEqual(expected);
    // the tokens as counted to fit: the system prompt's, and 4 plus the text's per message
    expect(tokens).toBe(expected.reduce((t, text) => t + 4 + text.length, 'system'.length));
  });
});
