import { listOf } from './schemas';

/** What the scanned document cannot know about an operation (keyed by Nest's `Controller_method` id). */
export interface RouteDoc {
  summary: string;
  /** The success body's schema (a component name, `[Name]` for a list, or an inline schema). */
  response?: string | [string] | Record<string, unknown>;
  /** The body is a Server-Sent Events stream of Letta messages. */
  sse?: boolean;
  /** The request body, in words (its JSON Schema is in request-schemas.ts, under the same id). */
  body?: string;
  /** Other statuses whose body is not the error schema (a component name per status). */
  other?: Record<string, string>;
}

/** Letta's flat StdioMCPServer / StreamableHTTPMCPServer, plus tool_safety, source and times. */
const MCP_SERVER = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    server_name: { type: 'string' },
    mcp_server_type: { enum: ['stdio', 'streamable_http'] },
    command: { type: 'string' },
    args: { type: 'array', items: { type: 'string' } },
    env: { type: 'object', additionalProperties: { type: 'string' } },
    server_url: { type: 'string' },
    auth_header: { type: ['string', 'null'] },
    auth_token: { type: ['string', 'null'] },
    custom_headers: { type: 'object', additionalProperties: { type: 'string' } },
    tool_safety: { type: 'object', additionalProperties: { type: 'string' } },
    source: { enum: ['api', 'file'] },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
};

const AGENT_BODY =
  "Letta's CreateAgent fields we use: name, agent_type (create only; default agents.default_agent_type), system, description, model or llm_config, tools/tool_ids, include_base_tools, tool_rules (Letta's and ours), include_base_tool_rules, memory_blocks, block_ids (the tenant's blocks, shared), tags, metadata; plus tool_executor, budgets, max_steps, model_script. Unknown fields are ignored.";
const BLOCK_UPDATE_BODY =
  "Letta's BlockUpdate: value, label (free in every agent that has the block), limit, description, read_only, metadata, tags, hidden";
const PASSAGE_BODY =
  'text (at most limits.max_passage_chars), tags (at most limits.max_tags_per_passage), metadata, created_at (ISO 8601)';
const MESSAGE = { type: 'object', properties: { message: { type: 'string' } } };
const MESSAGE_BODY =
  "Letta's LettaRequest: messages (role, content: a text or text and base64 image parts) or input; approvals ({type:'approval', tool_call_id, approve, reason, grant?}); max_steps, budgets, stream_tokens, include_pings, use_assistant_message (on POST /v1/agents/{id}/messages, stream_tokens: true, include_pings: false and background: true need streaming: true).";

/** Letta's CompactionResponse (counts include the system message, as Letta's do). */
const COMPACTION_RESPONSE = {
  type: 'object',
  required: ['summary', 'num_messages_before', 'num_messages_after'],
  properties: {
    summary: { type: 'string' },
    num_messages_before: { type: 'integer' },
    num_messages_after: { type: 'integer' },
  },
};

export const ROUTES: Record<string, RouteDoc> = {
  HealthController_health: {
    summary: 'Liveness: 200 while the process serves',
    response: 'Health',
  },
  HealthController_ready: {
    summary: 'Readiness: 503 unless database, event channel and migrations are fine',
    response: 'Readiness',
    other: { '503': 'Readiness' },
  },
  MetricsController_scrape: {
    summary: 'Prometheus metrics (text); the operator token when API keys are configured',
    response: { type: 'string' },
  },
  AgentsController_create: { summary: 'Create an agent', response: 'AgentState', body: AGENT_BODY },
  AgentsController_list: {
    summary:
      'List agents (newest first; cursors after/before; identity_id, identifier_keys filters; include as for retrieve)',
    response: ['AgentState'],
  },
  AgentsController_get: {
    summary:
      'Retrieve an agent; include=agent.tools|agent.blocks|agent.tags|agent.identities|agent.secrets|agent.pending_approval|… loads only those relations (none given: all), the others answer empty',
    response: 'AgentState',
  },
  AgentsController_update: {
    summary: 'Update an agent (partial)',
    response: 'AgentState',
    body: AGENT_BODY,
  },
  AgentsController_recompile: {
    summary: "The agent's system prompt as the next model call sees it (system + memory blocks)",
    response: { type: 'string' },
  },
  ConversationsController_recompile: {
    summary: "The system prompt of the conversation's agent, compiled",
    response: { type: 'string' },
  },
  ConversationsController_list: {
    summary: "List conversations (an agent's with agent_id; archive_status)",
    response: ['Conversation'],
  },
  ConversationsController_create: {
    summary: 'Create a conversation of an agent (agent_id)',
    response: 'Conversation',
  },
  ConversationsController_get: { summary: 'Retrieve a conversation', response: 'Conversation' },
  ConversationsController_update: {
    summary: 'Update a conversation (summary, archived; null keeps a field, as Letta)',
    response: 'Conversation',
  },
  ConversationsController_delete: { summary: 'Delete a conversation', response: MESSAGE },
  ConversationsController_fork: {
    summary:
      "Fork a conversation (`default` with agent_id too): a new one of the same agent sharing the source's in-context messages, up to message_id; hidden leaves it out of listings",
    response: 'Conversation',
  },
  ConversationsController_messages: {
    summary: "A conversation's messages (`default` with agent_id: the agent's own history)",
    response: ['LettaMessage'],
  },
  ConversationsController_send: {
    summary: 'Send a message in a conversation (streams unless streaming: false)',
    sse: true,
  },
  ConversationsController_stream: {
    summary: "Resume the stream of the conversation's newest run (starting_after)",
    sse: true,
  },
  ConversationsController_cancel: {
    summary: "Cancel the conversation's queued, running or parked runs (run id → status)",
    response: { type: 'object', additionalProperties: { type: 'string' } },
  },
  ConversationsController_compact: {
    summary: "Summarize the conversation's older in-context messages with the agent's model",
    response: COMPACTION_RESPONSE,
  },
  AgentsController_delete: {
    summary: 'Delete an agent (its queued and running work is stopped first)',
  },
  AgentsController_tools: {
    summary:
      "List an agent's tools, in its order (cursors after/before, limit, order=desc reverses it)",
    response: ['Tool'],
  },
  AgentsController_approval: {
    summary: 'Set whether a tool requires approval',
    response: 'AgentState',
  },
  AgentToolRunController_run: {
    summary:
      "Run one attached tool with given arguments through the agent's rules, in the agent's turn (a batch of its own); 200 with status error and the refusal in stderr when a rule refuses; 409 CONSENT_REQUIRED when the tool needs consent and no standing grant covers the call (nothing runs)",
    response: 'ToolExecutionResult',
    body: '{args?: {name: value}}',
  },
  AgentsController_attachIdentity: {
    summary: 'Attach an identity (idempotent; identities.max_per_agent)',
    response: 'AgentState',
  },
  AgentsController_detachIdentity: { summary: 'Detach an identity', response: 'AgentState' },
  IdentityAgentsController_list: {
    summary: "The identity's agents (the agents list's query parameters apply)",
    response: ['AgentState'],
  },
  IdentitiesController_list: {
    summary: "List the tenant's identities (name, identifier_key, identity_type, cursors, order)",
    response: ['Identity'],
  },
  IdentitiesController_count: {
    summary: "Count the tenant's identities",
    response: { type: 'integer' },
  },
  IdentitiesController_get: { summary: 'Retrieve an identity', response: 'Identity' },
  IdentitiesController_create: {
    summary: 'Create an identity (409 IDENTITY_EXISTS for a taken identifier_key)',
    response: 'Identity',
    body: "Letta's IdentityCreate: identifier_key, name, identity_type (org | user | other), properties [{key, value, type}], agent_ids",
  },
  IdentitiesController_upsert: {
    summary:
      'Create or update the identity with that identifier_key (given properties and agent_ids replace)',
    response: 'Identity',
    body: 'as for create',
  },
  IdentitiesController_update: {
    summary:
      "Update an identity (partial; properties merged by key and agent_ids added, as Letta's)",
    response: 'Identity',
    body: 'the create fields, each optional',
  },
  IdentitiesController_properties: {
    summary: "Replace an identity's properties",
    response: 'Identity',
    body: '[{key, value, type: string | number | boolean | json}]',
  },
  IdentitiesController_delete: { summary: 'Delete an identity (its agents stay)' },
  AgentsController_attach: { summary: 'Attach a tool', response: 'AgentState' },
  AgentsController_detach: { summary: 'Detach a tool', response: 'AgentState' },
  MemoryBlocksController_list: {
    summary:
      "List an agent's memory blocks, in its order (cursors after/before, limit, order=desc reverses it)",
    response: ['Block'],
  },
  MemoryBlocksController_get: { summary: 'Retrieve a memory block by label', response: 'Block' },
  MemoryBlocksController_update: {
    summary: 'Update a memory block by label (every agent sharing it sees the change)',
    response: 'Block',
    body: BLOCK_UPDATE_BODY,
  },
  MemoryBlocksController_attach: {
    summary: "Attach one of the tenant's blocks (409 BLOCK_LABEL_TAKEN for a label the agent has)",
    response: 'AgentState',
  },
  MemoryBlocksController_detach: {
    summary: 'Detach a block (the block stays)',
    response: 'AgentState',
  },
  BlocksController_create: {
    summary: 'Create a standalone memory block',
    response: 'Block',
    body: "Letta's CreateBlock: label, value, limit (≤ limits.max_block_chars), description, read_only, metadata, tags, hidden",
  },
  BlocksController_list: {
    summary:
      'List blocks (oldest first; label, label_search, value_search, description_search, tags, match_all_tags, cursors after/before, limit, order); hidden blocks only with show_hidden_blocks=true',
    response: ['Block'],
  },
  BlocksController_get: { summary: 'Retrieve a block', response: 'Block' },
  BlocksController_update: {
    summary: 'Update a block (every agent it is attached to sees the change)',
    response: 'Block',
    body: BLOCK_UPDATE_BODY,
  },
  BlocksController_delete: {
    summary: 'Delete a block (detached from every agent)',
    response: { type: 'object', properties: { message: { type: 'string' } } },
  },
  BlocksController_agentsOf: {
    summary:
      'The agents a block is attached to (cursors after/before, limit, order=desc reverses it)',
    response: ['AgentState'],
  },
  ArchivalMemoryController_insert: {
    summary:
      "Insert a passage into the agent's archival memory (its archive is made at the first insert)",
    response: ['Passage'],
    body: PASSAGE_BODY,
  },
  ArchivalMemoryController_list: {
    summary:
      "The agent's passages (oldest first; ascending=false for newest; search: full-text filter; cursors after/before; limit ≤ limits.max_search_results)",
    response: ['Passage'],
  },
  ArchivalMemoryController_search: {
    summary:
      "Search the agent's archival memory: full text, ranked (query, tags, tag_match_mode, top_k, start_datetime, end_datetime)",
    response: {
      type: 'object',
      required: ['count', 'results'],
      properties: {
        count: { type: 'integer' },
        results: {
          type: 'array',
          items: {
            type: 'object',
            required: ['id', 'content', 'timestamp'],
            properties: {
              id: { type: 'string' },
              content: { type: 'string' },
              timestamp: { type: 'string', format: 'date-time' },
              tags: { type: 'array', items: { type: 'string' } },
            },
          },
        },
      },
    },
  },
  ArchivalMemoryController_remove: {
    summary: "Delete a passage of the agent's archival memory",
    response: MESSAGE,
  },
  ArchivalMemoryController_attach: {
    summary: 'Attach an archive to the agent (one per agent: another one is 409 AGENT_HAS_ARCHIVE)',
    response: MESSAGE,
  },
  ArchivalMemoryController_detach: {
    summary: 'Detach an archive from the agent',
    response: MESSAGE,
  },
  ArchivesController_create: {
    summary: 'Create an archive',
    response: 'Archive',
    body: 'name, description (embedding settings are ignored: no embedding provider)',
  },
  ArchivesController_list: {
    summary: 'List archives (newest first; name, agent_id, cursors after/before, limit, order)',
    response: ['Archive'],
  },
  ArchivesController_get: { summary: 'Retrieve an archive', response: 'Archive' },
  ArchivesController_update: {
    summary: "Update an archive's name or description (null keeps it, as Letta)",
    response: 'Archive',
    body: 'name, description',
  },
  ArchivesController_delete: { summary: 'Delete an archive with its passages (204)' },
  ArchivesController_addPassage: {
    summary: 'Add a passage to an archive',
    response: 'Passage',
    body: PASSAGE_BODY,
  },
  ArchivesController_addPassages: {
    summary: 'Add passages to an archive (at most limits.max_passages_per_request)',
    response: ['Passage'],
    body: '{passages: [...]}, each as for one passage',
  },
  ArchivesController_deletePassage: { summary: 'Delete a passage of an archive (204)' },
  PassagesController_search: {
    summary:
      "Search the tenant's passages (agent_id, archive_id or all): full text, ranked; query, tags, tag_match_mode, limit, start_date, end_date",
    response: {
      type: 'array',
      items: {
        type: 'object',
        required: ['passage', 'score'],
        properties: {
          passage: { $ref: '#/components/schemas/Passage' },
          score: { type: 'number' },
        },
      },
    },
  },
  MessagesController_send: {
    summary: 'Send messages and wait for the batch (or stream with streaming: true)',
    response: 'LettaResponse',
    body: MESSAGE_BODY,
  },
  MessagesController_streamRoute: {
    summary: 'Send messages and stream the batch as Server-Sent Events',
    sse: true,
    body: MESSAGE_BODY,
  },
  MessagesController_sendAsync: {
    summary: 'Send messages; answer at once with the stored run',
    response: 'Run',
    body: MESSAGE_BODY,
  },
  MessagesController_list: { summary: "An agent's history", response: ['LettaMessage'] },
  MessagesController_cancel: {
    summary:
      "Cancel an agent's queued, running or parked runs (409 ALREADY_RESOLVED when a decision on the parked batch came first)",
    response: { type: 'object', additionalProperties: { type: 'string' } },
  },
  AgentFileController_export: {
    summary:
      "Export an agent as Letta's agent file (.af v2): blocks, tools (no secret values), rules, newest messages",
    response: { type: 'object', required: ['agents', 'tools', 'blocks'] },
  },
  AgentFileController_exportMany: {
    summary:
      'Export several agents as one agent file (ours; agent_ids, scrub_messages): shared blocks and tools listed once',
    response: { type: 'object', required: ['agents', 'tools', 'blocks'] },
  },
  AgentFileController_import: {
    summary:
      "Import an agent file, one agent or several (multipart field `file`; name, model, strip_messages, secrets) into the caller's tenant",
    response: {
      type: 'object',
      required: ['agent_ids'],
      properties: { agent_ids: { type: 'array', items: { type: 'string' } } },
    },
  },
  MessageContextController_reset: {
    summary:
      "Put the agent's history out of context (it stays stored); 409 AGENT_BUSY while a batch is open",
    response: 'AgentState',
    body: "Letta's ResetMessagesRequest: add_default_initial_messages (accepted; there are none to add)",
  },
  MessageContextController_summarize: {
    summary:
      "Summarize the older in-context messages with the agent's model; the summary replaces them in context",
    response: COMPACTION_RESPONSE,
    body: "Letta's CompactionRequest: compaction_settings {mode, prompt, clip_chars, sliding_window_percentage}",
  },
  RunsController_list: { summary: 'List runs', response: ['Run'] },
  RunsController_get: { summary: 'Retrieve a run', response: 'Run' },
  RunsController_messages: {
    summary: "A run's messages, oldest first (cursors after/before, limit, order=desc reverses it)",
    response: ['LettaMessage'],
  },
  StepsController_messages: {
    summary:
      'The messages a step wrote, oldest first (cursors after/before, limit, order=desc reverses it)',
    response: ['LettaMessage'],
  },
  RunsController_usage: {
    summary: "A run's token usage",
    response: {
      type: 'object',
      required: ['completion_tokens', 'prompt_tokens', 'total_tokens'],
      properties: {
        completion_tokens: { type: 'integer' },
        prompt_tokens: { type: 'integer' },
        total_tokens: { type: 'integer' },
        step_count: { type: 'integer' },
        prompt_tokens_details: {
          type: ['object', 'null'],
          properties: {
            cached_tokens: { type: 'integer' },
            cache_read_tokens: { type: 'null' },
            cache_creation_tokens: { type: 'null' },
          },
          description: 'the cached prompt tokens the endpoint reported (null: none reported)',
        },
        completion_tokens_details: {
          type: ['object', 'null'],
          properties: { reasoning_tokens: { type: 'integer' } },
          description: 'the reasoning tokens the endpoint reported (null: none reported)',
        },
      },
    },
  },
  StepsController_list: {
    summary:
      "List steps (the tenant's, or an agent's; feedback, has_feedback, model, start_date, end_date)",
    response: ['Step'],
  },
  StepsController_get: { summary: 'Retrieve a step', response: 'Step' },
  StepsController_feedback: {
    summary: 'Set feedback on a step (positive, negative; absent or null clears it) and its tags',
    response: 'Step',
  },
  StepsController_metrics: {
    summary: "A step's metrics: its model call's start and duration (what is not recorded is null)",
    response: 'StepMetrics',
  },
  StepsController_trace: {
    summary: "A step's provider trace: always null (raw provider requests are not stored)",
    response: { type: 'null' },
  },
  RunsController_trace: {
    summary:
      "A run's trace spans: 501 TRACES_NOT_STORED, as Letta answers without ClickHouse (spans go out over OTLP)",
    response: { type: 'array', items: { type: 'object' } },
  },
  TenantMessagesController_list: {
    summary: "The tenant's messages across agents (agent_id, conversation_id filters)",
    response: ['LettaMessage'],
  },
  TenantMessagesController_get: {
    summary: 'Retrieve a message (a list of its Letta views, as Letta answers)',
    response: ['LettaMessage'],
  },
  TenantMessagesController_search: {
    summary: 'Search the text of user and assistant messages',
    response: ['MessageSearchResult'],
  },
  TagsController_list: {
    summary: "The tags of the tenant's agents",
    response: { type: 'array', items: { type: 'string' } },
  },
  ToolsController_search: {
    summary: 'Tools whose name or description holds every word of the query',
    response: ['ToolSearchResult'],
  },
  WebhooksController_list: { summary: "The tenant's webhooks", response: ['Webhook'] },
  WebhooksController_create: {
    summary: 'Register a webhook (the signing secret is in this answer only)',
    response: 'Webhook',
  },
  WebhooksController_get: { summary: 'Retrieve a webhook', response: 'Webhook' },
  WebhooksController_remove: {
    summary: 'Delete a webhook with its deliveries and decision URLs',
    response: 'Webhook',
  },
  WebhooksController_deliveries: {
    summary: "A webhook's deliveries, newest first",
    response: ['WebhookDelivery'],
  },
  WebhooksController_decide: {
    summary: 'A one-time decision URL (the token is the credential): decide the consent request',
    response: {
      allOf: [
        { $ref: '#/components/schemas/ConsentRequest' },
        {
          type: 'object',
          properties: {
            grant: { oneOf: [{ $ref: '#/components/schemas/Grant' }, { type: 'null' }] },
          },
        },
      ],
    },
  },
  ConsoleController_notBuilt: {
    summary: 'The web console (503 with a hint when it was not built)',
  },
  RunsController_steps: {
    summary:
      "A run's steps (one per model call), oldest first (cursors after/before, limit, order=desc reverses it)",
    response: ['Step'],
  },
  RunsController_stream: {
    summary: 'Resume a background run as Server-Sent Events (starting_after)',
    sse: true,
  },
  ToolsController_list: {
    summary:
      "List the tenant's tools (built-in, file-declared, own; name, names, search filters; cursors after/before, limit, order=desc reverses it)",
    response: ['Tool'],
  },
  ToolsController_create: {
    summary:
      'Declare an http tool (409 TOOL_EXISTS for a taken name, QUOTA_EXCEEDED past quotas.tools)',
    response: 'Tool',
    body: 'name, description, parameters (JSON Schema), safety (read_only | side_effecting | privileged), kind: http, http {url, method, headers (${NAME} from tenant secrets or the allow-list), timeout_ms}',
  },
  ToolsController_upsert: {
    summary:
      "Create the tenant's http tool of that name, or update it (same id; as Letta's upsert, the fields given not null change, http whole); 409 TOOL_READ_ONLY for a built-in, file or MCP tool's name",
    response: 'Tool',
    body: 'as for create (of a tool that exists, only name is required)',
  },
  ToolsController_update: {
    summary:
      "Update the tenant's http tool (partial; http merges key by key); 409 TOOL_IN_USE renaming a tool agents use, TOOL_RULES_CONFLICT when their run_first arguments no longer fit",
    response: 'Tool',
    body: "the create fields, each optional; Letta's json_schema {name, description, parameters} and args_json_schema are read too",
  },
  ToolsController_get: { summary: 'Retrieve a tool', response: 'Tool' },
  ToolsController_delete: { summary: 'Delete a tool' },
  ToolsController_addBaseTools: {
    summary: 'The built-in tools (they always exist: idempotent, nothing is created)',
    response: ['Tool'],
  },
  McpServersController_create: {
    summary: 'Declare an MCP server; its tools are listed at once (docs/mcp.md)',
    response: MCP_SERVER,
    body: "Letta's CreateMCPServerRequest: server_name, config {mcp_server_type: stdio (command, args, env; 403 MCP_STDIO_NOT_ALLOWED unless mcp.stdio.allowed_commands lists the command) | streamable_http (server_url, auth_header, auth_token, custom_headers)}; values from tenant secrets as ${NAME}; tool_safety {tool: read_only | side_effecting | privileged}",
  },
  McpServersController_list: {
    summary: "The tenant's and the operator's MCP servers",
    response: { type: 'array', items: MCP_SERVER },
  },
  McpServersController_get: { summary: 'Retrieve an MCP server', response: MCP_SERVER },
  McpServersController_update: {
    summary:
      'Update an MCP server (config fields merge, null keeping one, as Letta; the transport cannot change)',
    response: MCP_SERVER,
    body: 'server_name?, config? (same mcp_server_type), tool_safety?',
  },
  McpServersController_delete: { summary: 'Delete an MCP server and its tools (204)' },
  McpServersController_tools: { summary: "An MCP server's tools", response: ['Tool'] },
  McpServersController_tool: { summary: "One of an MCP server's tools", response: 'Tool' },
  McpServersController_refresh: {
    summary:
      "List an MCP server's tools now (502 MCP_SERVER_UNAVAILABLE when it cannot be reached)",
    response: {
      type: 'object',
      properties: {
        added: { type: 'array', items: { type: 'string' } },
        updated: { type: 'array', items: { type: 'string' } },
        deleted: { type: 'array', items: { type: 'string' } },
        skipped: {
          type: 'array',
          items: {
            type: 'object',
            properties: { name: { type: 'string' }, reason: { type: 'string' } },
          },
        },
      },
    },
  },
  ModelsController_list: { summary: "The configured providers' models", response: ['Model'] },
  ModelsController_embeddings: {
    summary: 'The configured embedding models (models.embeddings; none: an empty list)',
    response: ['EmbeddingModel'],
  },
  ConsentController_list: {
    summary: 'Consent requests (status=pending for the waiting ones)',
    response: ['ConsentRequest'],
  },
  ConsentController_get: { summary: 'Retrieve a consent request', response: 'ConsentRequest' },
  ConsentController_decide: {
    summary:
      'Decide a consent request (first decision wins; 409 ALREADY_RESOLVED for the loser, GRANT_LIMIT for a grant past consent.max_active_grants_per_agent)',
    response: 'ConsentRequest',
    body: 'decision: approve_once | approve_for_duration (seconds) | approve_for_scope | deny (reason); constraint: a JSON Schema the arguments must match for a grant',
  },
  ConsentController_audit: {
    summary:
      'The consent audit log, oldest first (order=desc: newest first); filters agent_id, request_id, tool_name, decision, channel, since/until (ISO date-times); cursors after/before (entry ids); limit ≤ limits.max_page_size',
    response: ['AuditEntry'],
  },
  AgentsController_secrets: {
    summary:
      "An agent's own secrets (Letta's secrets / tool_exec_environment_variables): names only",
    response: ['Secret'],
  },
  SecretsController_list: {
    summary: "The tenant's secrets: names only, never values",
    response: ['Secret'],
  },
  SecretsController_put: {
    summary: 'Set a secret (write-only; encrypted at rest); `${NAME}` in tool headers resolves it',
    response: 'Secret',
    body: '{value}: a non-empty string without control characters, at most secrets.max_value_bytes',
  },
  SecretsController_delete: { summary: 'Delete a secret' },
  GrantsController_list: {
    summary:
      "An agent's standing grants, newest first (limit ≤ limits.max_page_size, after, before, order)",
    response: ['Grant'],
  },
  GrantsController_listAll: {
    summary:
      "The tenant's standing grants, newest first (agent_id filters; limit ≤ limits.max_page_size)",
    response: ['Grant'],
  },
  GrantsController_revoke: { summary: 'Revoke a grant', response: 'Grant' },
  QuotasController_get: {
    summary:
      "The calling tenant's quotas: for each, what it uses and its bound (stored counts over every instance; running_runs on the instance that answers)",
    response: 'TenantUsage',
  },
};

/** The success body's schema of a route doc, as OpenAPI wants it. */
export function responseSchema(doc: RouteDoc): Record<string, unknown> | null {
  const r = doc.response;
  if (r === undefined) return null;
  if (typeof r === 'string') return { $ref: `#/components/schemas/${r}` };
  if (Array.isArray(r)) return listOf(r[0]);
  return r;
}
