import { SEARCH_MODES } from '../core/memory/passage-input';
import { AGENT_TYPES } from '../core/agents/agent-type';
import { CLIENT_TOOL_NAME } from '../core/agents/validate-agent';
import { IDENTITY_TYPES, PROPERTY_TYPES } from '../core/identities/validate-identity';
import { BUDGET_FIELD_NAMES, BUDGET_LIMITS } from '../core/loop/budgets';
import { MEDIA_TYPES } from '../core/loop/content-parts';
import { SERVER_NAME } from '../core/mcp/mcp-server-spec';
import { CONSENT_DECISIONS, MAX_REASON_LENGTH } from '../core/permissions/consent-decision';
import { toolRuleJsonSchema } from '../core/rules/validate-tool-rules';
import { MAX_RETURN_CHAR_LIMIT, TOOL_SAFETIES } from '../core/tools/tool-definition';
import { WEBHOOK_EVENTS, WEBHOOK_FIELDS } from '../core/webhooks/webhook-rules';
import { COMPACTION_MODES } from '../processing/message-context.service';
import { STEP_FEEDBACK } from '../processing/query.dto';
import { MESSAGE_TYPES } from '../processing/send-message.dto';
import { STEP_TAG_MAX } from '../processing/step-feedback.dto';
import { HTTP_METHODS, TOOL_NAME } from '../tools/tool-declaration';

/**
 * Request bodies as JSON Schemas, keyed by operation id like ROUTES. The validators stay the judge
 * (they also check what a schema cannot: bounds from config, tools that exist); these say the shape,
 * with enums and rule fields taken from the validators' own tables. Objects stay open
 * (additionalProperties) where the validators ignore Letta's extra fields. The e2e harness checks
 * every body the suites send that the app accepts against these (test/support/response-contract.ts).
 */
type Schema = Record<string, unknown>;

const str: Schema = { type: 'string' };
const text: Schema = { type: 'string', minLength: 1 };
const nullable = (type: string): Schema => ({ type: [type, 'null'] });
const strList: Schema = { type: 'array', items: str };
const obj = (properties: Record<string, Schema>, required: string[] = []): Schema => ({
  type: 'object',
  ...(required.length ? { required } : {}),
  properties,
});
const int = (minimum: number, maximum?: number): Schema => ({
  type: 'integer',
  minimum,
  ...(maximum !== undefined ? { maximum } : {}),
});
const orNull = (s: Schema): Schema => ({ anyOf: [s, { type: 'null' }] });
/** A pattern matching a word in any case (`get` as `GET`). */
const anyCase = (w: string) => [...w].map((c) => `[${c.toUpperCase()}${c.toLowerCase()}]`).join('');

const BUDGETS: Record<string, Schema> = Object.fromEntries(
  BUDGET_FIELD_NAMES.map((k) => [k, orNull(int(BUDGET_LIMITS[k].min, BUDGET_LIMITS[k].max))]),
);

/** Letta's CreateBlock (a block's value defaults to '', its limit to the default). */
const BLOCK_CREATE = obj(
  {
    label: { type: 'string', minLength: 1, maxLength: 200 },
    value: nullable('string'),
    limit: orNull(int(1)),
    description: nullable('string'),
    read_only: nullable('boolean'),
    metadata: nullable('object'),
    hidden: nullable('boolean'),
  },
  ['label'],
);
const BLOCK_UPDATE = obj({
  value: nullable('string'),
  label: orNull({ type: 'string', minLength: 1, maxLength: 200 }),
  limit: orNull(int(1)),
  description: nullable('string'),
  read_only: nullable('boolean'),
  metadata: nullable('object'),
  hidden: nullable('boolean'),
});

const LLM_CONFIG = obj({
  model: str,
  model_endpoint_type: str,
  model_endpoint: nullable('string'),
  provider_name: nullable('string'),
  context_window: { type: 'number' },
  max_tokens: nullable('number'),
  temperature: { type: 'number' },
});

/** Letta's CreateAgent / UpdateAgent as far as this server reads it (all optional: defaults fill in). */
/** Letta's embedding choice on an agent or archive create: a handle, or a config naming a model. */
const EMBEDDING: Record<string, Schema> = {
  embedding: nullable('string'),
  embedding_config: orNull({
    type: 'object',
    properties: {
      handle: nullable('string'),
      embedding_model: str,
      embedding_dim: int(1),
    },
  }),
};

const AGENT = obj({
  name: orNull(text),
  system: nullable('string'),
  description: nullable('string'),
  // on create only; an update may repeat the agent's own
  agent_type: orNull({ enum: [...AGENT_TYPES] }),
  model: nullable('string'),
  llm_config: orNull(LLM_CONFIG),
  ...EMBEDDING,
  context_window_limit: orNull(int(1)),
  model_settings: orNull(
    obj({
      temperature: { type: 'number', minimum: 0, maximum: 2 },
      max_output_tokens: int(1),
      parallel_tool_calls: { type: 'boolean' },
    }),
  ),
  tools: orNull(strList),
  include_base_tools: nullable('boolean'),
  client_tools: orNull(strList),
  tool_rules: orNull({ type: 'array', items: toolRuleJsonSchema() }),
  memory_blocks: orNull({ type: 'array', items: BLOCK_CREATE }),
  block_ids: orNull(strList),
  tags: orNull(strList),
  metadata: nullable('object'),
  timezone: nullable('string'),
  hidden: nullable('boolean'),
  max_files_open: orNull(int(1, 1000)),
  per_file_view_window_char_limit: orNull(int(1)),
  message_buffer_autoclear: orNull({ const: false }),
  tool_executor: orNull({
    type: 'object',
    additionalProperties: false,
    properties: {
      tool_timeout_seconds: orNull(int(1)),
      consent_timeout_seconds: orNull(int(1)),
      dedupe_window_seconds: orNull(int(0)),
    },
  }),
  budgets: orNull({ type: 'object', additionalProperties: false, properties: BUDGETS }),
  max_steps: orNull(int(1, 10000)),
  model_script: orNull({
    type: 'array',
    items: obj({
      content: nullable('string'),
      reasoning: nullable('string'),
      tool_calls: orNull({
        type: 'array',
        items: obj({ name: text, arguments: nullable('object') }, ['name']),
      }),
    }),
  }),
});

const PASSAGE = obj(
  {
    text: { type: 'string', minLength: 1, pattern: '\\S' },
    tags: orNull({ anyOf: [str, strList] }),
    metadata: nullable('object'),
    created_at: nullable('string'),
  },
  ['text'],
);

/** A message's content: a text, or text and base64 image parts. */
const CONTENT: Schema = {
  anyOf: [
    str,
    {
      type: 'array',
      items: {
        anyOf: [
          obj({ type: { const: 'text' }, text: str }, ['type', 'text']),
          obj(
            {
              type: { const: 'image' },
              source: obj(
                {
                  type: { const: 'base64' },
                  media_type: { enum: Object.keys(MEDIA_TYPES) },
                  data: str,
                },
                ['media_type', 'data'],
              ),
            },
            ['type', 'source'],
          ),
        ],
      },
    },
  ],
};
const GRANT = obj(
  {
    decision: { enum: CONSENT_DECISIONS },
    seconds: nullable('integer'),
    constraint: nullable('object'),
  },
  ['decision'],
);
/** One answer of an approval item: a decision (ApprovalReturn) or a client tool's result (ToolReturn). */
const APPROVAL_ANSWER = {
  anyOf: [
    obj(
      {
        type: { const: 'approval' },
        tool_call_id: text,
        approve: { type: 'boolean' },
        reason: nullable('string'),
        grant: orNull(GRANT),
      },
      ['tool_call_id', 'approve'],
    ),
    obj(
      {
        type: { const: 'tool' },
        tool_call_id: text,
        status: { enum: ['success', 'error'] },
        tool_return: CONTENT,
      },
      ['type', 'tool_call_id', 'status'],
    ),
  ],
};
const MESSAGE_ITEM = {
  anyOf: [
    obj({ role: { enum: ['user', 'system', 'assistant'] }, content: CONTENT }, ['content']),
    obj(
      {
        type: { const: 'approval' },
        approvals: { type: 'array', minItems: 1, items: APPROVAL_ANSWER },
        approve: { type: 'boolean' },
        approval_request_id: nullable('string'),
        reason: nullable('string'),
        grant: orNull(GRANT),
      },
      ['type'],
    ),
    obj(
      {
        type: { const: 'tool_return' },
        tool_returns: {
          type: 'array',
          minItems: 1,
          items: obj(
            { tool_call_id: text, status: { enum: ['success', 'error'] }, tool_return: CONTENT },
            ['tool_call_id', 'status'],
          ),
        },
      },
      ['type', 'tool_returns'],
    ),
  ],
};
/** The view knobs of a body (use_assistant_message, include_return_message_types). */
const VIEW: Record<string, Schema> = {
  use_assistant_message: nullable('boolean'),
  assistant_message_tool_name: nullable('string'),
  assistant_message_tool_kwarg: orNull({ const: 'message' }),
  include_return_message_types: orNull({ type: 'array', items: { enum: MESSAGE_TYPES } }),
  include_pings: nullable('boolean'),
  include_progress: nullable('boolean'),
};
/** Letta's LettaRequest / LettaStreamingRequest: `messages`, or `input` (one user message), or both. */
const SEND_MESSAGE: Schema = {
  ...obj({
    messages: orNull({ type: 'array', minItems: 1, items: MESSAGE_ITEM }),
    input: orNull(CONTENT),
    max_steps: orNull(int(1, 10000)),
    streaming: nullable('boolean'),
    stream_tokens: nullable('boolean'),
    background: nullable('boolean'),
    client_tools: orNull({
      type: 'array',
      items: obj(
        {
          name: { type: 'string', pattern: CLIENT_TOOL_NAME.source },
          description: nullable('string'),
          parameters: nullable('object'),
        },
        ['name'],
      ),
    }),
    agent_id: nullable('string'),
    ...VIEW,
    ...BUDGETS,
  }),
  anyOf: [
    { required: ['messages'], properties: { messages: { type: 'array' } } },
    { required: ['input'], properties: { input: { not: { type: 'null' } } } },
  ],
};
const RESUME_STREAM = obj({ starting_after: orNull(int(0)), ...VIEW });
const COMPACTION = obj({
  compaction_settings: orNull(
    obj({
      mode: orNull({ enum: COMPACTION_MODES }),
      prompt: orNull({ type: 'string', minLength: 1 }),
      clip_chars: orNull(int(1)),
      sliding_window_percentage: orNull({ type: 'number', minimum: 0, exclusiveMaximum: 1 }),
    }),
  ),
  agent_id: nullable('string'),
});

const IDENTITY_PROPERTY = obj(
  {
    key: { type: 'string', minLength: 1, maxLength: 200 },
    value: { type: ['string', 'number', 'boolean', 'object'] },
    type: { enum: PROPERTY_TYPES },
  },
  ['key', 'value', 'type'],
);
const IDENTITY_FIELDS = {
  identifier_key: { type: 'string', minLength: 1, maxLength: 200 },
  name: { type: 'string', minLength: 1, maxLength: 200 },
  identity_type: { enum: IDENTITY_TYPES },
  properties: orNull({ type: 'array', items: IDENTITY_PROPERTY }),
  agent_ids: orNull(strList),
  block_ids: orNull({ type: 'array', maxItems: 0 }),
};
const IDENTITY_CREATE = obj(IDENTITY_FIELDS, ['identifier_key', 'name', 'identity_type']);

const SAFETY = { enum: TOOL_SAFETIES };
/** An http tool's declaration (Letta's Python source_code is refused). */
const TOOL_FIELDS = {
  name: { type: 'string', pattern: TOOL_NAME.source },
  description: str,
  parameters: obj({ type: { const: 'object' } }, ['type']),
  safety: SAFETY,
  kind: { const: 'http' },
  tags: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 200 } },
  return_char_limit: int(1, MAX_RETURN_CHAR_LIMIT),
  default_requires_approval: { type: 'boolean' },
  http: obj(
    {
      url: { type: 'string', pattern: '^https?://' },
      method: { type: 'string', pattern: `^(?:${HTTP_METHODS.map(anyCase).join('|')})$` },
      headers: orNull({ type: 'object', additionalProperties: str }),
      timeout_ms: orNull(int(1, 3_600_000)),
    },
    ['url'],
  ),
};
const TOOL_REQUIRED = ['name', 'safety', 'kind', 'http'];
/** Letta's ToolCreate takes its optional fields null, as not given. */
const TOOL_CREATE = obj(
  Object.fromEntries(
    Object.entries(TOOL_FIELDS).map(([k, v]) => [k, TOOL_REQUIRED.includes(k) ? v : orNull(v)]),
  ),
  TOOL_REQUIRED,
);
/** An update (and an upsert of a tool that exists), as Letta's ToolUpdate: null keeps a field. */
const TOOL_UPDATE_FIELDS: Record<string, Schema> = Object.fromEntries(
  Object.entries(TOOL_FIELDS).map(([k, v]) => [k, orNull(v)]),
);

const STRING_MAP = { type: 'object', additionalProperties: str };
const MCP_CONFIG = {
  anyOf: [
    obj(
      {
        mcp_server_type: { const: 'stdio' },
        command: text,
        args: strList,
        env: orNull(STRING_MAP),
      },
      ['mcp_server_type', 'command'],
    ),
    obj(
      {
        mcp_server_type: { const: 'streamable_http' },
        server_url: { type: 'string', pattern: '^https?://' },
        auth_header: nullable('string'),
        auth_token: nullable('string'),
        custom_headers: orNull(STRING_MAP),
      },
      ['mcp_server_type', 'server_url'],
    ),
  ],
};
const MCP_FIELDS = {
  server_name: { type: 'string', pattern: SERVER_NAME.source },
  tool_safety: orNull({ type: 'object', additionalProperties: SAFETY }),
};

const DECISION = obj(
  {
    decision: { enum: CONSENT_DECISIONS },
    seconds: orNull(int(1)),
    constraint: nullable('object'),
    reason: orNull({ type: 'string', maxLength: MAX_REASON_LENGTH }),
  },
  ['decision'],
);
const SEARCH = (required: string[]) =>
  obj(
    {
      query: { type: 'string', ...(required.length ? { minLength: 1 } : {}) },
      limit: int(1, 1000),
    },
    required,
  );
const CONVERSATION = obj({
  agent_id: nullable('string'),
  summary: nullable('string'),
  description: nullable('string'),
  archived: nullable('boolean'),
});

/** Letta's CreateAgent: the fields of an update, and the agent's starting history. */
const AGENT_CREATE: Schema = {
  ...AGENT,
  properties: {
    ...(AGENT.properties as Record<string, Schema>),
    include_base_tool_rules: nullable('boolean'),
    initial_message_sequence: orNull({
      type: 'array',
      items: obj(
        {
          role: { enum: ['user', 'system', 'assistant'] },
          content: CONTENT,
          otid: nullable('string'),
        },
        ['content'],
      ),
    }),
  },
};

export const REQUEST_BODIES: Record<string, Schema> = {
  AgentsController_create: AGENT_CREATE,
  AgentsController_update: AGENT,
  AgentsController_approval: obj({
    requires_approval: { type: ['boolean', 'string'], enum: [true, false, 'true', 'false'] },
    body_requires_approval: { type: ['boolean', 'string'], enum: [true, false, 'true', 'false'] },
  }),
  AgentToolRunController_run: obj({ args: nullable('object') }),
  IdentitiesController_create: IDENTITY_CREATE,
  IdentitiesController_upsert: IDENTITY_CREATE,
  IdentitiesController_update: obj(IDENTITY_FIELDS),
  IdentitiesController_properties: { type: 'array', items: IDENTITY_PROPERTY },
  MemoryBlocksController_update: BLOCK_UPDATE,
  BlocksController_create: BLOCK_CREATE,
  BlocksController_update: BLOCK_UPDATE,
  ArchivalMemoryController_insert: PASSAGE,
  ArchivesController_create: obj({ name: text, description: nullable('string'), ...EMBEDDING }, [
    'name',
  ]),
  ArchivesController_update: obj({ name: orNull(text), description: nullable('string') }),
  ArchivesController_addPassage: PASSAGE,
  ArchivesController_addPassages: obj({ passages: { type: 'array', items: PASSAGE } }, [
    'passages',
  ]),
  PassagesController_search: obj({
    query: nullable('string'),
    agent_id: nullable('string'),
    archive_id: nullable('string'),
    tags: orNull({ anyOf: [str, strList] }),
    tag_match_mode: orNull({ enum: ['any', 'all'] }),
    limit: orNull(int(1)),
    start_date: nullable('string'),
    end_date: nullable('string'),
    search_mode: orNull({ enum: [...SEARCH_MODES] }),
  }),
  MessagesController_send: SEND_MESSAGE,
  MessagesController_streamRoute: SEND_MESSAGE,
  MessagesController_sendAsync: SEND_MESSAGE,
  MessagesController_cancel: obj({ run_ids: orNull(strList) }),
  MessageContextController_reset: obj({ add_default_initial_messages: nullable('boolean') }),
  MessageContextController_summarize: COMPACTION,
  RunsController_stream: RESUME_STREAM,
  TenantMessagesController_search: {
    ...SEARCH(['query']),
    properties: {
      ...SEARCH(['query']).properties!,
      agent_id: nullable('string'),
      conversation_id: nullable('string'),
      start_date: { type: ['string', 'null'], format: 'date-time' },
      end_date: { type: ['string', 'null'], format: 'date-time' },
    },
  },
  StepsController_feedback: obj({
    feedback: { enum: [...STEP_FEEDBACK, null] },
    tags: orNull({
      type: 'array',
      items: { type: 'string', minLength: 1, maxLength: STEP_TAG_MAX },
    }),
  }),
  ToolsController_search: SEARCH([]),
  ToolsController_create: TOOL_CREATE,
  // the fields of a create; of a tool that exists, those given not null change (http whole)
  ToolsController_upsert: obj({ ...TOOL_UPDATE_FIELDS, name: TOOL_FIELDS.name }, ['name']),
  ToolsController_update: obj({
    ...TOOL_UPDATE_FIELDS,
    // merged key by key into the tool's http
    http: orNull({ ...TOOL_FIELDS.http, required: undefined }),
    json_schema: nullable('object'),
    args_json_schema: nullable('object'),
  }),
  McpServersController_create: obj({ ...MCP_FIELDS, config: MCP_CONFIG }, [
    'server_name',
    'config',
  ]),
  McpServersController_update: obj({
    ...MCP_FIELDS,
    server_name: orNull(MCP_FIELDS.server_name),
    config: { type: 'object' },
  }),
  ConsentController_decide: DECISION,
  WebhooksController_decide: DECISION,
  WebhooksController_create: {
    type: 'object',
    required: ['url', 'events'],
    additionalProperties: false,
    properties: {
      url: { type: 'string', pattern: '^https?://' },
      events: { type: 'array', minItems: 1, items: { enum: WEBHOOK_EVENTS } },
      secret: nullable('string'),
      description: nullable('string'),
    } satisfies Record<(typeof WEBHOOK_FIELDS)[number], Schema>,
  },
  SecretsController_put: obj({ value: text }, ['value']),
  ConversationsController_create: CONVERSATION,
  ConversationsController_update: CONVERSATION,
  ConversationsController_send: SEND_MESSAGE,
  ConversationsController_stream: {
    ...RESUME_STREAM,
    properties: { ...RESUME_STREAM.properties!, agent_id: nullable('string') },
  },
  ConversationsController_compact: COMPACTION,
  ConversationsController_recompile: obj({ agent_id: nullable('string') }),
  AgentFileController_exportMany: obj(
    {
      agent_ids: { type: 'array', items: str, minItems: 1 },
      scrub_messages: { type: 'boolean' },
    },
    ['agent_ids'],
  ),
  AgentFileController_import: obj(
    {
      file: { type: 'string', contentMediaType: 'application/json' },
      name: str,
      model: str,
      override_name: str,
      override_model_handle: str,
      strip_messages: { enum: ['true', 'false'] },
      append_copy_suffix: { enum: ['true', 'false'] },
      secrets: { type: 'string', description: 'a JSON object of secret name → value' },
      env_vars_json: str,
    },
    ['file'],
  ),
};

/** Operations whose body is multipart/form-data rather than JSON. */
export const MULTIPART = new Set(['AgentFileController_import']);
