import { APP_VERSION } from '../common/version';
import { SCHEMAS } from './schemas';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const frame = (
  type: string,
  properties: Record<string, unknown> = {},
  required: string[] = [],
) => ({
  type: 'object',
  required: ['type', ...required],
  properties: { type: { const: type }, ...properties },
});
const decision = { enum: ['approve_once', 'approve_for_duration', 'approve_for_scope', 'deny'] };

/** The frames of `/v1/ws`, client → server and server → client (JSON Schema, one per frame type). */
const FRAMES = {
  Subscribe: frame('subscribe', {
    agent_ids: {
      type: 'array',
      items: { type: 'string' },
      description: 'none: every agent of the tenant',
    },
  }),
  ConsentDecision: frame(
    'consent.decision',
    {
      request_id: { type: 'string' },
      decision,
      seconds: { type: 'integer', minimum: 1 },
      constraint: {
        type: 'object',
        description: 'A JSON Schema the arguments of covered calls must match',
      },
      reason: { type: 'string' },
    },
    ['request_id', 'decision'],
  ),
  Ping: frame('ping'),
  Subscribed: frame('subscribed', {
    agent_ids: { type: ['array', 'null'], items: { type: 'string' } },
  }),
  Pong: frame('pong'),
  ConsentRequestFrame: frame(
    'consent.request',
    {
      request: {
        type: 'object',
        required: ['id', 'agent_id', 'run_id', 'tool_call_id', 'tool_name', 'arguments', 'scope'],
        properties: (SCHEMAS.ConsentRequest as { properties: Record<string, unknown> }).properties,
      },
    },
    ['request'],
  ),
  ConsentResolvedFrame: frame(
    'consent.resolved',
    {
      request_id: { type: 'string' },
      decision: { type: 'string' },
      reason: { type: 'string' },
      decided_by: { type: 'string' },
      grant_id: { type: 'string' },
      channel: { type: 'string' },
    },
    ['request_id', 'decision', 'decided_by'],
  ),
  RunEventFrame: frame('run.event', {
    event: {
      type: 'string',
      description:
        'run.started, step.started, step.completed, tools.executing, tools.completed, message, message.delta, input_message, run.completed',
    },
    agent_id: { type: 'string' },
    run_id: { type: 'string' },
    data: { type: 'object' },
  }),
  ErrorFrame: frame(
    'error',
    {
      code: {
        type: 'string',
        description:
          'MALFORMED_FRAME, UNKNOWN_FRAME_TYPE, VALIDATION_FAILED, NOT_FOUND, ALREADY_RESOLVED, TOO_MANY_SUBSCRIPTIONS, RATE_LIMITED (at most once a second; a client whose refused frames pass another second of them, with no quiet second between, is closed with 1008)',
      },
      message: { type: 'string' },
      ref: { type: 'string' },
    },
    ['code', 'message'],
  ),
};

const message = (name: string) => ({ $ref: `#/components/messages/${name}` });

/** An AsyncAPI 3.0 document of the WebSocket consent protocol, served at /asyncapi.json. */
export function asyncApiDocument(): Record<string, unknown> {
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Rulebound agent server: WebSocket consent protocol',
      version: APP_VERSION,
      description:
        'One JSON object per text frame. The API key as `Authorization: Bearer` on the upgrade or `?token=`; a bad key refuses the upgrade with 401. Bounds (subscriptions, frames per second, connections per key) are in docs/security.md.',
    },
    channels: {
      ws: {
        address: '/v1/ws',
        messages: Object.fromEntries(Object.keys(FRAMES).map((k) => [k, message(k)])),
      },
    },
    operations: {
      clientSends: {
        action: 'receive',
        channel: { $ref: '#/channels/ws' },
        summary: 'Frames a client sends',
        messages: ['Subscribe', 'ConsentDecision', 'Ping'].map((k) => ({
          $ref: `#/channels/ws/messages/${k}`,
        })),
      },
      serverSends: {
        action: 'send',
        channel: { $ref: '#/channels/ws' },
        summary: 'Frames the server sends',
        messages: [
          'Subscribed',
          'Pong',
          'ConsentRequestFrame',
          'ConsentResolvedFrame',
          'RunEventFrame',
          'ErrorFrame',
        ].map((k) => ({ $ref: `#/channels/ws/messages/${k}` })),
      },
    },
    components: {
      schemas: FRAMES,
      messages: Object.fromEntries(
        Object.keys(FRAMES).map((k) => [
          k,
          { name: k, contentType: 'application/json', payload: ref(k) },
        ]),
      ),
    },
  };
}
