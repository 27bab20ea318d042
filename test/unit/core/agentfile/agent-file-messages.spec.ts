import { StoredMessage, toAfMessages } from '../../../../src/core/agentfile/agent-file-messages';

const row = (
  id: string,
  message_type: string,
  payload: Record<string, unknown>,
  step_id: string | null = 'step-1',
): StoredMessage => ({ id, message_type, step_id, payload, created_at: 0 });

describe('toAfMessages', () => {
  it('a call held until its outcome was known (stored twice once it ran) is exported once', () => {
    const call = { name: 'pay', arguments: '{"q":"5"}', tool_call_id: 'call_1' };
    const { messages } = toAfMessages(
      [
        row('m1', 'user_message', { content: 'pay it' }, null),
        row('m2', 'tool_call_message', { tool_call: call, _held: true }),
        row('m3', 'tool_call_message', { tool_call: call }),
        row('m4', 'tool_return_message', { tool_call_id: 'call_1', tool_return: 'ok' }),
      ],
      'system',
      0,
    );
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(messages[2].tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'pay', arguments: '{"q":"5"}' } },
    ]);
  });
});
