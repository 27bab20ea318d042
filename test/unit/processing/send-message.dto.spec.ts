import { DomainError } from '../../../src/common/domain-error';
import { parseSendMessage } from '../../../src/processing/send-message.dto';

describe('parseSendMessage', () => {
  const ok: [string, unknown, Record<string, unknown>][] = [
    [
      'a user message',
      { messages: [{ role: 'user', content: 'hi' }] },
      { messages: [{ role: 'user', content: 'hi' }] },
    ],
    [
      'text parts are joined',
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'a' },
              { type: 'text', text: 'b' },
            ],
          },
        ],
      },
      { messages: [{ role: 'user', content: 'ab' }] },
    ],
    ['max_steps', { messages: [{ role: 'user', content: 'x' }], max_steps: 7 }, { maxSteps: 7 }],
    [
      'stream_tokens on a streaming request',
      { messages: [{ role: 'user', content: 'x' }], streaming: true, stream_tokens: true },
      { streaming: true, streamTokens: true },
    ],
    [
      'stream_tokens without streaming is ignored',
      { messages: [{ role: 'user', content: 'x' }], stream_tokens: true },
      { streaming: false, streamTokens: false },
    ],
    ['no budgets', { messages: [{ role: 'user', content: 'x' }] }, { budgets: {} }],
    [
      'budgets (null = not given)',
      {
        messages: [{ role: 'user', content: 'x' }],
        max_tokens_per_batch: 900,
        max_batch_seconds: 30,
        model_call_timeout_seconds: null,
      },
      { budgets: { max_tokens_per_batch: 900, max_batch_seconds: 30 } },
    ],
    [
      'streaming flag',
      { messages: [{ role: 'user', content: 'x' }], streaming: true },
      { streaming: true },
    ],
    [
      'Letta approvals',
      {
        messages: [
          {
            type: 'approval',
            approvals: [{ type: 'approval', tool_call_id: 'c1', approve: false, reason: 'no' }],
          },
        ],
      },
      { approvals: [{ tool_call_id: 'c1', approve: false, reason: 'no', grant: null }] },
    ],
    [
      'legacy approval with a grant',
      {
        messages: [
          {
            type: 'approval',
            approval_request_id: 'r1',
            approve: true,
            grant: { decision: 'approve_for_duration', seconds: 60 },
          },
        ],
      },
      {
        approvalRequestId: 'r1',
        approvals: [
          {
            tool_call_id: '',
            approve: true,
            reason: null,
            grant: { decision: 'approve_for_duration', seconds: 60 },
          },
        ],
      },
    ],
  ];
  it.each(ok)('%s', (_n, body, expected) => {
    expect(parseSendMessage(body, { streamPath: false })).toMatchObject(expected);
  });

  const bad: [string, unknown, string][] = [
    ['not an object', [], ''],
    ['no messages', { messages: [] }, 'messages'],
    [
      'content of the wrong type',
      { messages: [{ role: 'user', content: 5 }] },
      'messages[0].content',
    ],
    ['an unknown role', { messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].role'],
    ['max_steps 0', { messages: [{ role: 'user', content: 'x' }], max_steps: 0 }, 'max_steps'],
    [
      'a token budget of 0',
      { messages: [{ role: 'user', content: 'x' }], max_tokens_per_batch: 0 },
      'max_tokens_per_batch',
    ],
    [
      'a wall time as text',
      { messages: [{ role: 'user', content: 'x' }], max_batch_seconds: '30' },
      'max_batch_seconds',
    ],
    [
      'a fractional model call timeout',
      { messages: [{ role: 'user', content: 'x' }], model_call_timeout_seconds: 0.5 },
      'model_call_timeout_seconds',
    ],
    [
      'an approval without approve',
      { messages: [{ type: 'approval', approvals: [{ tool_call_id: 'c' }] }] },
      'messages[0].approvals[0]',
    ],
    [
      'a grant without decision',
      { messages: [{ type: 'approval', approve: true, grant: {} }] },
      'messages[0].grant',
    ],
  ];
  it.each(bad)('400 for %s', (_n, body, path) => {
    try {
      parseSendMessage(body, { streamPath: false });
      throw new Error('accepted');
    } catch (e) {
      expect(e).toBeInstanceOf(DomainError);
      const err = e as DomainError;
      expect(err.code).toBe('VALIDATION_FAILED');
      expect((err.details.problems as { path: string }[]).map((p) => p.path)).toContain(path);
    }
  });
});
