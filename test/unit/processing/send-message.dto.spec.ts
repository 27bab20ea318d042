import { DomainError } from '../../../src/common/domain-error';
import { parseSendMessage } from '../../../src/processing/send-message.dto';

const LIMITS = {
  maxClientTools: 2,
  maxClientToolBytes: 300,
  grants: { max_duration_seconds: 315_360_000 },
  images: { maxImages: 2, maxImageBytes: 64 },
  maxUrlLength: 2048,
};
const say = { messages: [{ role: 'user', content: 'x' }] };

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
      'background on a streaming request',
      { messages: [{ role: 'user', content: 'x' }], streaming: true, background: true },
      { streaming: true, background: true },
    ],
    [
      'background without streaming is ignored (a route that reads past it: async, conversations)',
      { messages: [{ role: 'user', content: 'x' }], background: true },
      { streaming: false, background: false },
    ],
    [
      'stream_tokens without streaming is ignored (a route that reads past it)',
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
        legacyApproval: { approvalRequestId: 'r1' },
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
    [
      "an assistant message (Letta's MessageCreate allows it): its text",
      {
        messages: [
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'I said ' },
              { type: 'text', text: 'so' },
            ],
          },
          { role: 'user', content: 'go on' },
        ],
      },
      {
        messages: [
          { role: 'assistant', content: 'I said so' },
          { role: 'user', content: 'go on' },
        ],
      },
    ],
    [
      'Letta 1.x input',
      { input: 'hi there' },
      { messages: [{ role: 'user', content: 'hi there' }] },
    ],
    [
      'use_assistant_message false and return types',
      { ...say, use_assistant_message: false, include_return_message_types: ['assistant_message'] },
      { view: { useAssistantMessage: false, types: ['assistant_message'] } },
    ],
    [
      "every type of Letta's MessageType (Letta Code's list)",
      {
        ...say,
        include_return_message_types: [
          'user_message',
          'assistant_message',
          'reasoning_message',
          'event_message',
          'summary_message',
          'approval_request_message',
          'tool_return_message',
          'approval_response_message',
          'hidden_reasoning_message',
        ],
      },
      {
        view: {
          useAssistantMessage: true,
          types: [
            'user_message',
            'assistant_message',
            'reasoning_message',
            'event_message',
            'summary_message',
            'approval_request_message',
            'tool_return_message',
            'approval_response_message',
            'hidden_reasoning_message',
          ],
        },
      },
    ],
    [
      'client tools',
      {
        ...say,
        client_tools: [{ name: 'Bash', description: 'run', parameters: { type: 'object' } }],
      },
      { clientTools: [{ name: 'Bash', description: 'run', parameters: { type: 'object' } }] },
    ],
    [
      "a client tool's result (Letta's ToolReturn)",
      {
        messages: [
          {
            type: 'approval',
            approvals: [
              { type: 'tool', tool_call_id: 'c1', tool_return: 'out', status: 'success' },
            ],
          },
        ],
      },
      { approvals: [{ tool_call_id: 'c1', approve: true, tool_return: 'out', status: 'success' }] },
    ],
    [
      "a client tool's result with an image (Letta Code's Read of a picture): named in its place",
      {
        messages: [
          {
            type: 'approval',
            approvals: [
              {
                type: 'tool',
                tool_call_id: 'c1',
                status: 'success',
                tool_return: [
                  { type: 'text', text: '[Image: x.png] ' },
                  {
                    type: 'image',
                    source: { type: 'base64', media_type: 'image/png', data: 'AA==' },
                  },
                ],
              },
            ],
          },
        ],
      },
      {
        approvals: [
          {
            tool_call_id: 'c1',
            tool_return:
              '[Image: x.png] [image/png returned by the tool; not shown: a tool result is text]',
          },
        ],
      },
    ],
  ];
  it.each(ok)('%s', (_n, body, expected) => {
    expect(parseSendMessage(body, { streamPath: false, limits: LIMITS })).toMatchObject(expected);
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
    [
      'an image in an assistant message',
      {
        messages: [
          {
            role: 'assistant',
            content: [
              {
                type: 'image',
                source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' },
              },
            ],
          },
        ],
      },
      'messages[0].content',
    ],
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
      'an approval with an empty tool_call_id (it must name the call it answers)',
      {
        messages: [{ type: 'approval', approvals: [{ tool_call_id: '', approve: true }] }],
      },
      'messages[0].approvals[0]',
    ],
    [
      'a legacy approval with an empty approval_request_id',
      { messages: [{ type: 'approval', approval_request_id: '', approve: true }] },
      'messages[0].approval_request_id',
    ],
    [
      'a grant of 1e-300 seconds (expired at birth)',
      {
        messages: [
          {
            type: 'approval',
            approve: true,
            grant: { decision: 'approve_for_duration', seconds: 1e-300 },
          },
        ],
      },
      'messages[0].grant.seconds',
    ],
    [
      'a grant whose constraint does not compile (refused before anything is stored)',
      {
        messages: [
          {
            type: 'approval',
            approvals: [
              {
                type: 'approval',
                tool_call_id: 'c',
                approve: true,
                grant: { decision: 'approve_for_scope', constraint: { type: 'nope' } },
              },
            ],
          },
        ],
      },
      'messages[0].approvals[0].grant.constraint.type',
    ],
    [
      'a grant without decision',
      { messages: [{ type: 'approval', approve: true, grant: {} }] },
      'messages[0].grant',
    ],
    [
      'more client tools than processing.max_client_tools',
      { ...say, client_tools: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] },
      'client_tools',
    ],
    [
      'a client tool larger than processing.max_client_tool_bytes',
      { ...say, client_tools: [{ name: 'a', description: 'x'.repeat(400) }] },
      'client_tools[0]',
    ],
    [
      'a client tool with a bad name',
      { ...say, client_tools: [{ name: 'a b' }] },
      'client_tools[0]',
    ],
    [
      'a ToolReturn without status',
      {
        messages: [
          { type: 'approval', approvals: [{ type: 'tool', tool_call_id: 'c', tool_return: 'x' }] },
        ],
      },
      'messages[0].approvals[0].status',
    ],
    [
      'another assistant_message_tool_name',
      { ...say, assistant_message_tool_name: 'reply' },
      'assistant_message_tool_name',
    ],
    [
      'an unknown return message type',
      { ...say, include_return_message_types: ['x'] },
      'include_return_message_types',
    ],
  ];
  // Letta's POST /v1/agents/{id}/messages (strictStreamOptions): a streaming option away from its
  // default without streaming: true is refused; the defaults themselves are accepted
  it.each([
    ['stream_tokens: true', { ...say, stream_tokens: true }, ['stream_tokens']],
    ['include_pings: false', { ...say, include_pings: false }, ['include_pings']],
    ['background: true', { ...say, background: true }, ['background']],
    [
      'all three, streaming: false',
      { ...say, streaming: false, stream_tokens: true, include_pings: false, background: true },
      ['stream_tokens', 'include_pings', 'background'],
    ],
  ])('strict stream options: 400 for %s without streaming', (_n, body, paths) => {
    try {
      parseSendMessage(body, { streamPath: false, limits: LIMITS, strictStreamOptions: true });
      throw new Error('accepted');
    } catch (e) {
      expect(e).toBeInstanceOf(DomainError);
      const err = e as DomainError;
      expect(err.code).toBe('VALIDATION_FAILED');
      expect((err.details.problems as { path: string }[]).map((p) => p.path)).toEqual(paths);
    }
  });

  it.each([
    ['their defaults', { ...say, stream_tokens: false, include_pings: true, background: false }],
    ['streaming: true', { ...say, streaming: true, stream_tokens: true, include_pings: false }],
  ])('strict stream options: %s accepted', (_n, body) => {
    expect(() =>
      parseSendMessage(body, { streamPath: false, limits: LIMITS, strictStreamOptions: true }),
    ).not.toThrow();
  });

  it.each(bad)('400 for %s', (_n, body, path) => {
    try {
      parseSendMessage(body, { streamPath: false, limits: LIMITS });
      throw new Error('accepted');
    } catch (e) {
      expect(e).toBeInstanceOf(DomainError);
      const err = e as DomainError;
      expect(err.code).toBe('VALIDATION_FAILED');
      expect((err.details.problems as { path: string }[]).map((p) => p.path)).toContain(path);
    }
  });
});
