/**
 * JSON Schemas (OpenAPI 3.1 = JSON Schema 2020-12) of the API's response bodies. Each describes what a
 * mapper writes (`*.mapper.ts`); the e2e harness validates every response the suites receive against
 * them, so a mapper that drifts fails the tests. Objects stay open (Letta's clients ignore extra
 * fields, and so may ours).
 */
type Schema = Record<string, unknown>;

const str = { type: 'string' };
const strOrNull = { type: ['string', 'null'] };
const int = { type: 'integer' };
const dateTime = { type: 'string', format: 'date-time' };
const dateTimeOrNull = { type: ['string', 'null'], format: 'date-time' };
const obj = (required: string[], properties: Record<string, unknown>): Schema => ({
  type: 'object',
  required,
  properties,
});
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const listOf = (name: string) => ({ type: 'array', items: ref(name) });

export const SCHEMAS: Record<string, Schema> = {
  Error: obj(['code', 'message', 'details'], {
    code: { ...str, description: 'Stable error code, e.g. VALIDATION_FAILED, NOT_FOUND' },
    message: str,
    details: { type: 'object' },
  }),
  Health: obj(['status', 'version'], {
    status: { enum: ['ok', 'degraded'] },
    version: str,
    instance_id: str,
    database: { enum: ['up', 'down'] },
    events: { enum: ['up', 'down'] },
  }),
  Readiness: obj(['status', 'checks'], {
    status: { enum: ['ready', 'not_ready'] },
    instance_id: str,
    checks: { type: 'object' },
  }),
  Block: obj(['id', 'label', 'value'], {
    id: str,
    label: str,
    value: str,
    limit: int,
    description: strOrNull,
    read_only: { type: 'boolean' },
  }),
  Tool: obj(['id', 'name', 'tool_type', 'json_schema'], {
    id: str,
    name: str,
    description: strOrNull,
    tool_type: str,
    source_type: str,
    json_schema: { type: 'object' },
    args_json_schema: { type: ['object', 'null'] },
    tags: { type: 'array', items: str },
    safety: { enum: ['read_only', 'side_effecting', 'privileged'] },
    kind: str,
    source: strOrNull,
  }),
  AgentState: obj(['id', 'name', 'system', 'tools', 'tool_rules', 'memory', 'llm_config'], {
    id: str,
    name: str,
    system: strOrNull,
    description: strOrNull,
    agent_type: str,
    tools: listOf('Tool'),
    tool_rules: { type: 'array', items: { type: 'object', required: ['type'] } },
    memory: obj(['blocks'], { blocks: listOf('Block') }),
    llm_config: { type: 'object' },
    model: strOrNull,
    tags: { type: 'array', items: str },
    metadata: { type: ['object', 'null'] },
    pending_approval: { type: ['object', 'null'] },
    last_stop_reason: strOrNull,
    created_at: dateTime,
    updated_at: dateTime,
  }),
  LettaMessage: obj(['id', 'date', 'message_type'], {
    id: str,
    date: dateTime,
    message_type: {
      enum: [
        'system_message',
        'user_message',
        'assistant_message',
        'reasoning_message',
        'hidden_reasoning_message',
        'tool_call_message',
        'tool_return_message',
        'approval_request_message',
        'approval_response_message',
      ],
    },
    run_id: strOrNull,
    step_id: strOrNull,
    seq_id: { type: ['integer', 'null'] },
  }),
  StopReason: obj(['message_type', 'stop_reason'], {
    message_type: { const: 'stop_reason' },
    stop_reason: str,
  }),
  Usage: obj(['message_type', 'completion_tokens', 'prompt_tokens', 'total_tokens', 'step_count'], {
    message_type: { const: 'usage_statistics' },
    completion_tokens: int,
    prompt_tokens: int,
    total_tokens: int,
    step_count: int,
  }),
  LettaResponse: obj(['messages', 'stop_reason', 'usage'], {
    messages: listOf('LettaMessage'),
    stop_reason: ref('StopReason'),
    usage: ref('Usage'),
    run_id: str,
  }),
  Run: obj(['id', 'agent_id', 'status', 'created_at'], {
    id: str,
    agent_id: str,
    status: { enum: ['created', 'running', 'completed', 'failed', 'cancelled'] },
    stop_reason: strOrNull,
    background: { type: 'boolean' },
    batch_id: strOrNull,
    created_at: dateTime,
    started_at: dateTimeOrNull,
    completed_at: dateTimeOrNull,
    usage: ref('Usage'),
    error: strOrNull,
  }),
  Step: obj(['id', 'run_id', 'agent_id', 'step_number'], {
    id: str,
    run_id: str,
    agent_id: str,
    batch_id: strOrNull,
    step_number: int,
    model: strOrNull,
    prompt_tokens: int,
    completion_tokens: int,
    total_tokens: int,
    stop_reason: strOrNull,
    status: str,
    created_at: dateTime,
  }),
  ConsentRequest: obj(
    ['id', 'agent_id', 'run_id', 'tool_call_id', 'tool_name', 'arguments', 'scope', 'status'],
    {
      id: str,
      agent_id: str,
      run_id: str,
      batch_id: str,
      tool_call_id: str,
      tool_name: str,
      arguments: { type: 'object' },
      scope: str,
      reason: str,
      status: { enum: ['pending', 'approved', 'denied', 'expired', 'cancelled'] },
      decision: strOrNull,
      decision_reason: strOrNull,
      decided_by: strOrNull,
      channel: strOrNull,
      created_at: dateTime,
      expires_at: dateTime,
      decided_at: dateTimeOrNull,
      grant_id: strOrNull,
      consumed_at: dateTimeOrNull,
    },
  ),
  Grant: obj(['id', 'agent_id', 'scope', 'decision'], {
    id: str,
    agent_id: str,
    scope: str,
    decision: str,
    expires_at: dateTimeOrNull,
    constraint: { type: ['object', 'null'] },
    created_at: dateTime,
    revoked_at: dateTimeOrNull,
    request_id: strOrNull,
  }),
  AuditEntry: obj(['id', 'at', 'event'], {
    id: int,
    at: dateTime,
    event: str,
    agent_id: strOrNull,
    request_id: strOrNull,
    grant_id: strOrNull,
    tool_name: strOrNull,
    decision: strOrNull,
    actor: strOrNull,
    channel: strOrNull,
  }),
  Model: obj(['handle', 'name', 'model_endpoint_type'], {
    handle: str,
    name: str,
    model: str,
    model_endpoint_type: str,
    provider_type: str,
    context_window: int,
  }),
  Secret: obj(['name', 'source', 'created_at', 'updated_at'], {
    name: str,
    source: { enum: ['api', 'config'] },
    created_at: { type: ['integer', 'null'] },
    updated_at: { type: ['integer', 'null'] },
  }),
};
