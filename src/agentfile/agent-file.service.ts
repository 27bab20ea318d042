import { Inject, Injectable } from '@nestjs/common';
import { safeLlmConfig } from '../agents/agent-response.mapper';
import { AgentsService } from '../agents/agents.service';
import { CLOCK } from '../common/clock';
import {
  badRequest,
  DomainError,
  notFound,
  validationFailed,
  ValidationProblem,
} from '../common/domain-error';
import { ID_GENERATOR } from '../common/ids';
import { PageBytes } from '../common/list-page';
import { APP_VERSION } from '../common/version';
import { tooDeep } from '../common/json-body';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ConversationsService } from '../conversations/conversations.service';
import { fromAfMessages, toAfMessages } from '../core/agentfile/agent-file-messages';
import { countProblem } from '../core/limits';
import { renderSystemPrompt } from '../core/loop/context-builder';
import type { Clock, IdGenerator } from '../core/ports';
import { referencesOnly } from '../core/secrets/declared-values';
import { EmbeddingsService } from '../models/embeddings/embeddings.service';
import { NewMessage, ProcessingRepository } from '../processing/processing.repository';
import { toToolResponse } from '../tools/tool-response.mapper';
import { ToolsService, ToolView } from '../tools/tools.service';

type Json = Record<string, unknown>;

/** What an import may override (Letta's form fields of `POST /v1/agents/import`). */
export interface ImportOptions {
  name: string | null;
  model: string | null;
  stripMessages: boolean;
  appendCopySuffix: boolean;
  /** Agent secrets (`secrets` form field, a JSON object of NAME → value). */
  secrets: Json | null;
}

/** An export reads at most this many times `agent_files.max_bytes` of stored messages (export). */
const READ_FACTOR = 4;

/** An export larger than this server imports; `bytes` null: more than the bound (its read was cut). */
function fileTooLarge(maxBytes: number, bytes: number | null): DomainError {
  const size = bytes === null ? `more than ${maxBytes}` : `${bytes}`;
  return new DomainError(
    'payload_too_large',
    'AGENT_FILE_TOO_LARGE',
    `the agent file would be ${size} bytes; this server imports files of at most ${maxBytes} bytes ` +
      '(agent_files.max_bytes). Export with scrub_messages=true (no history), or fewer agents, or raise ' +
      'agent_files.max_bytes on the servers that export and import it',
    { limit: 'agent_files.max_bytes', max_bytes: maxBytes, bytes },
  );
}

/** Our agent fields that Letta's CreateAgent lacks: they travel in the file beside Letta's. */
const EXTENSION_FIELDS = [
  'tool_executor',
  'max_steps',
  'budgets',
  'model_script',
  'client_tools',
] as const;

/**
 * Letta's agent file (`.af`, AgentFileSchema v2): one agent with its blocks, tools (http tool
 * definitions with only `${NAME}` header references: never a secret value), tool rules (ours beside
 * Letta's) and, unless scrubbed, its newest messages. Import creates the agent in the caller's tenant
 * through agent creation (the same validation), creating the file's http tools the tenant lacks.
 */
@Injectable()
export class AgentFileService {
  constructor(
    private readonly agents: AgentsService,
    private readonly tools: ToolsService,
    private readonly messages: ProcessingRepository,
    private readonly conversations: ConversationsService,
    private readonly embeddings: EmbeddingsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
  ) {}

  /** The file's embedding model when it is one configured here; else the default (never a 400). */
  private embeddingOf(agent: Json): Json {
    const chosen = this.embeddings.choose({ embedding_config: agent.embedding_config });
    return 'ok' in chosen && chosen.ok ? { embedding: chosen.ok.handle } : {};
  }

  /**
   * The agents as one file (Letta's exporter takes a list too): a block or tool several of them have is
   * listed once and named by each. `conversationId` (one agent only) exports that conversation's history.
   * A file larger than `agent_files.max_bytes` (compact JSON, as written here) would be refused by this
   * server's import: 413 AGENT_FILE_TOO_LARGE instead. Messages are read within READ_FACTOR times that,
   * estimated: their stored form weighs more than the file's (a short message about seven times), so a
   * read cut there is of a file past the bound, and memory stays bounded whatever the history holds.
   */
  async export(
    tenantId: string,
    agentIds: string[],
    opts: { scrubMessages: boolean; conversationId: string | null },
  ): Promise<Json> {
    const blocks: Json[] = [];
    const tools: Json[] = [];
    const blockIds = new Map<string, string>(); // stored id → the file's
    const toolIds = new Map<string, string>();
    const dropped: string[] = [];
    const agents: Json[] = [];
    const maxBytes = this.config.agent_files.max_bytes;
    const read = new PageBytes(READ_FACTOR * maxBytes);
    for (const [index, agentId] of agentIds.entries()) {
      const view = await this.agents.get(tenantId, agentId);
      let conversationId: string | null = null;
      if (opts.conversationId) {
        const target = await this.conversations.target(tenantId, opts.conversationId, agentId);
        if (target.agentId !== agentId)
          throw notFound('conversation of agent', opts.conversationId);
        conversationId = target.conversationId;
      }
      const a = view.record;
      for (const b of a.blocks) {
        if (blockIds.has(b.id)) continue;
        blockIds.set(b.id, `block-${blocks.length}`);
        blocks.push({
          id: `block-${blocks.length}`,
          label: b.label,
          value: b.value,
          limit: b.limit,
          description: b.description,
          read_only: b.read_only,
          metadata: {},
        });
      }
      for (const t of view.tools) {
        if (toolIds.has(t.id)) continue;
        toolIds.set(t.id, `tool-${tools.length}`);
        tools.push({ ...this.exportTool(t, dropped), id: `tool-${tools.length}` });
      }

      let messages: Json[] = [];
      let inContext: string[] = [];
      if (!opts.scrubMessages) {
        const context = await this.messages.messageContext(agentId, conversationId);
        const history = { start_seq: 0, inherited: context?.inherited ?? null };
        const max = this.config.agent_files.max_messages;
        if (read.spent) throw fileTooLarge(maxBytes, null);
        const rows = await this.messages.inContextMessages(
          agentId,
          conversationId,
          history,
          max,
          read.left,
        );
        for (const r of rows) read.take(r);
        // fewer than asked while older ones exist: the read was cut at its bytes
        const cut =
          rows.length > 0 &&
          rows.length < max &&
          (await this.messages.inContextBefore(agentId, conversationId, history, rows[0].seq_id));
        if (cut) throw fileTooLarge(maxBytes, null);
        const system = renderSystemPrompt(a.system, a.blocks);
        const out = toAfMessages(rows, system, rows[0]?.created_at ?? this.clock.now());
        messages = out.messages as unknown as Json[];
        const start = context?.start_seq ?? 0;
        inContext = [
          out.messages[0].id,
          ...new Set(
            rows.filter((r) => r.seq_id >= start).flatMap((r) => out.idOf.get(r.id) ?? []),
          ),
        ];
      }
      const agent: Json = {
        id: `agent-${index}`,
        name: a.name,
        system: a.system,
        description: a.description,
        agent_type: a.agent_type,
        llm_config: safeLlmConfig(a.llm_config),
        embedding_config: a.embedding_config,
        tags: a.tags,
        metadata: a.metadata,
        timezone: a.timezone,
        max_files_open: a.max_files_open,
        per_file_view_window_char_limit: a.per_file_view_window_char_limit,
        message_buffer_autoclear: false,
        tool_rules: a.tool_rules,
        tool_ids: view.tools.map((t) => toolIds.get(t.id)),
        block_ids: a.blocks.map((b) => blockIds.get(b.id)),
        source_ids: [],
        memory_blocks: [],
        tools: [],
        include_base_tools: false,
        include_base_tool_rules: false,
        messages,
        in_context_message_ids: inContext,
        files_agents: [],
        group_ids: [],
      };
      for (const f of EXTENSION_FIELDS) if (a[f] != null) agent[f] = a[f];
      agents.push(agent);
    }
    const file = {
      agents,
      groups: [],
      blocks,
      files: [],
      sources: [],
      tools,
      mcp_servers: [],
      skills: [],
      metadata: {
        exported_by: `${EXPORTED_BY} ${APP_VERSION}`,
        ...(dropped.length ? { dropped_headers: dropped.join(', ') } : {}),
      },
      created_at: new Date(this.clock.now()).toISOString(),
    };
    const bytes = Buffer.byteLength(JSON.stringify(file));
    if (bytes > maxBytes) throw fileTooLarge(maxBytes, bytes);
    return file;
  }

  /**
   * A tool as Letta's ToolSchema; an http tool keeps only headers that reference secrets by name and hold
   * no literal text that could be one (`Bearer ${KEY}` is kept, `sk-… ${KEY}` dropped).
   */
  private exportTool(t: ToolView, dropped: string[]): Json {
    const out = toToolResponse(t);
    if (t.http) {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(t.http.headers ?? {})) {
        if (referencesOnly(v)) headers[k] = v;
        else dropped.push(`${t.name}.${k}`);
      }
      out.http = { ...t.http, headers };
    }
    return out;
  }

  /**
   * Creates the file's agents (several when Letta wrote a group, or another server several agents): a
   * block or tool the file lists once is created once, and a block several agents name is one shared
   * block. Everything is checked before anything is created; a failure while creating removes what this
   * import created.
   */
  async import(
    tenantId: string,
    file: Buffer,
    opts: ImportOptions,
  ): Promise<{ agent_ids: string[] }> {
    const limits = this.config.agent_files;
    const af = parseAgentFile(file, limits.max_agents, this.config.server.json_max_depth);
    const problems: ValidationProblem[] = [];
    const messages = opts.stripMessages ? [] : af.agents.flatMap((a) => listOf(a.messages));
    // each tool call is stored as a message of its own: a 5 MB file of one message holding 100,000
    // calls stored 100,000 rows past this bound (a valid history has no more calls than messages)
    const calls = messages.reduce<number>(
      (n, m) => n + listOf(isObject(m) && m.tool_calls).length,
      0,
    );
    for (const [count, what] of [
      [messages.length, 'messages'],
      [calls, 'tool calls in their messages'],
    ] as const)
      if (count > limits.max_messages)
        throw validationFailed([
          {
            path: af.agents.length === 1 ? 'agents[0].messages' : 'agents',
            message: `carry ${count} ${what}; at most ${limits.max_messages} (agent_files.max_messages)`,
            limit: 'agent_files.max_messages',
          },
        ]);
    const plans = af.agents.map((agent, i) => this.planAgent(af, agent, i, opts, problems));
    if (problems.length) throw validationFailed(problems, 'agent file is invalid');

    // the file's http tools the tenant lacks are created (validated as POST /v1/tools/ does)
    const known = await this.tools.availableNames(tenantId);
    const createdTools: string[] = [];
    const createdAgents: string[] = [];
    const storedBlock = new Map<unknown, string>(); // the file's block id → the stored block's id
    try {
      for (const t of new Set(plans.flatMap((p) => p.tools))) {
        if (typeof t.name !== 'string' || known.has(t.name) || t.kind !== 'http') continue;
        const parameters = (t.json_schema as Json | undefined)?.parameters ?? t.args_json_schema;
        const tool = await this.tools
          .create(tenantId, {
            name: t.name,
            description: t.description ?? '',
            parameters,
            safety: t.safety,
            kind: 'http',
            http: t.http,
          })
          .catch((e: unknown) => {
            throw prefixProblems(e, `tools[${af.tools.indexOf(t)}]`);
          });
        known.add(t.name);
        createdTools.push(tool.id);
      }
      for (const plan of plans) {
        const fresh = plan.blocks.filter((b) => !storedBlock.has(b.id));
        const shared = plan.blocks.flatMap((b) => storedBlock.get(b.id) ?? []);
        const view = await this.agents.create(tenantId, {
          ...plan.body,
          memory_blocks: fresh.map((b) => ({
            label: b.label,
            value: b.value,
            limit: b.limit,
            description: b.description ?? null,
            read_only: b.read_only ?? false,
          })),
          ...(shared.length ? { block_ids: shared } : {}),
        });
        createdAgents.push(view.record.id);
        for (const b of fresh) {
          const stored = view.record.blocks.find((x) => x.label === b.label);
          if (stored) storedBlock.set(b.id, stored.id);
        }
      }
      // (a history past quotas.stored_bytes is refused too: the agents go with it)
      for (const [i, plan] of plans.entries())
        await this.storeMessages(tenantId, createdAgents[i], plan);
    } catch (e) {
      for (const id of createdAgents.reverse()) await this.agents.delete(tenantId, id);
      for (const id of createdTools) await this.tools.delete(tenantId, id);
      throw e;
    }
    return { agent_ids: createdAgents };
  }

  /** One agent of the file, checked: its creation body, tools, blocks and messages. */
  private planAgent(
    af: AgentFile,
    agent: Json,
    index: number,
    opts: ImportOptions,
    problems: ValidationProblem[],
  ): AgentPlan {
    const at = `agents[${index}]`;
    const rawMessages = opts.stripMessages || !Array.isArray(agent.messages) ? [] : agent.messages;
    const inContextIds = Array.isArray(agent.in_context_message_ids)
      ? agent.in_context_message_ids.filter((x): x is string => typeof x === 'string')
      : [];
    const imported = fromAfMessages(rawMessages, {
      systemPromptId: inContextIds[0] ?? null,
      path: `${at}.messages`,
      images: {
        maxImages: this.config.processing.max_images_per_message,
        maxImageBytes: this.config.processing.max_image_bytes,
      },
      // Letta's MemGPT agents speak through send_message: their text is inner monologue. Ours keep the
      // reasoning apart (not exported), so a text in our own file is what the agent said.
      innerThoughts:
        !af.ours && typeof agent.agent_type === 'string' && agent.agent_type.startsWith('memgpt'),
    });
    problems.push(...imported.problems);
    const byId = (index: Map<unknown, Json>, ids: unknown, path: string): Json[] =>
      (Array.isArray(ids) ? ids : []).flatMap((id, i) => {
        const found = index.get(id);
        if (!found) problems.push({ path: `${path}[${i}]`, message: `names no entry of the file` });
        return found ? [found] : [];
      });
    // counted before anything is created: an agent naming 1,000 tools had them all created (and
    // deleted again) before agent creation refused it
    const count = (key: string, bound: 'max_tools_per_agent' | 'max_memory_blocks_per_agent') =>
      countProblem(`${at}.${key}`, listOf(agent[key]).length, bound, this.config.limits) ?? [];
    const counted = [
      count('tool_ids', 'max_tools_per_agent'),
      count('block_ids', 'max_memory_blocks_per_agent'),
    ];
    problems.push(...counted.flat());
    const tools = byId(af.toolsById, agent.tool_ids, `${at}.tool_ids`);
    const blocks = byId(af.blocksById, agent.block_ids, `${at}.block_ids`);
    const body: Json = {
      name: opts.name ?? (opts.appendCopySuffix ? `${str(agent.name)}_copy` : agent.name),
      system: agent.system,
      description: agent.description ?? null,
      // absent: the operator's default, as for an agent created over the API
      agent_type: agent.agent_type ?? null,
      tool_rules: agent.tool_rules ?? [],
      tags: agent.tags ?? [],
      metadata: agent.metadata ?? null,
      // absent (an older file): Letta's default, UTC
      timezone: agent.timezone ?? null,
      max_files_open: agent.max_files_open ?? null,
      per_file_view_window_char_limit: agent.per_file_view_window_char_limit ?? null,
      tools: tools.map((t) => t.name),
      include_base_tools: false,
      // the file's rules are the agent's (Letta writes false); only a file asking for them gets Letta's base rules
      include_base_tool_rules: agent.include_base_tool_rules === true,
      ...(opts.model ? { model: opts.model } : { llm_config: agent.llm_config }),
      ...(opts.secrets ? { secrets: opts.secrets } : {}),
      ...this.embeddingOf(agent),
    };
    for (const f of EXTENSION_FIELDS) if (agent[f] != null) body[f] = agent[f];
    return { body, tools, blocks, messages: imported.messages, inContextIds };
  }

  /** The agent's imported history, and Letta's in-context list as its context start. */
  private async storeMessages(tenantId: string, agentId: string, plan: AgentPlan): Promise<void> {
    const turnSteps = new Map<number, string>();
    const rows: NewMessage[] = plan.messages.map((m) => {
      let step: string | null = null;
      if (m.turn !== null) {
        step = turnSteps.get(m.turn) ?? this.ids.prefixed('step');
        turnSteps.set(m.turn, step);
      }
      return {
        id: this.ids.prefixed('message'),
        tenant_id: tenantId,
        agent_id: agentId,
        run_id: null,
        step_id: step,
        batch_id: null,
        conversation_id: null,
        message_type: m.message_type as NewMessage['message_type'],
        payload: m.payload,
        created_at: m.created_at || this.clock.now(),
      };
    });
    const stored = await this.messages.appendImported(agentId, rows);
    // Letta's in-context list: what is not in it is history only (the system prompt first, skipped)
    if (plan.inContextIds.length > 0 && stored.length > 0) {
      const inContext = new Set(plan.inContextIds);
      const first = plan.messages.findIndex((m) => inContext.has(m.fileId));
      const start = first < 0 ? stored.at(-1)!.seq_id + 1 : stored[first].seq_id;
      if (start > stored[0].seq_id)
        await this.messages.setMessageContext(
          tenantId,
          agentId,
          null,
          { start_seq: start, summary: null },
          this.clock.now(),
        );
    }
  }
}

interface AgentPlan {
  body: Json;
  tools: Json[];
  blocks: Json[];
  messages: ReturnType<typeof fromAfMessages>['messages'];
  inContextIds: string[];
}

const str = (v: unknown) => (typeof v === 'string' ? v : '');
const listOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const isObject = (v: unknown): v is Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

interface AgentFile {
  agents: Json[];
  tools: Json[];
  blocks: Json[];
  /** By id (unique in the file): an agent's ids are looked up, never searched for (60,000 of each froze the server 9 s). */
  toolsById: Map<unknown, Json>;
  blocksById: Map<unknown, Json>;
  /** Written by this server's export: an assistant's text is what it said, whatever its agent_type. */
  ours: boolean;
}

const EXPORTED_BY = 'rulebound-agent-server';

/**
 * The file's JSON (double-encoded JSON too, as Letta accepts): one agent or several, ids unique, no data
 * sources; `groups` are read past (their agents are imported on their own).
 */
function parseAgentFile(file: Buffer, maxAgents: number, maxDepth: number): AgentFile {
  let json: unknown;
  try {
    json = JSON.parse(file.toString('utf8'));
    if (typeof json === 'string') json = JSON.parse(json);
  } catch {
    throw badRequest('AGENT_FILE_INVALID', 'the agent file is not JSON');
  }
  // a multipart upload skips the JSON body parser and its depth check
  const deep = tooDeep(json, maxDepth);
  if (deep) throw deep;
  if (
    typeof json !== 'object' ||
    json === null ||
    Array.isArray(json) ||
    !Array.isArray((json as Json).agents)
  )
    throw badRequest(
      'AGENT_FILE_INVALID',
      'not an agent file (AgentFileSchema v2 with an `agents` list; the legacy v1 format is not read)',
    );
  const j = json as Json;
  const problems: ValidationProblem[] = [];
  const list = (k: string): Json[] => {
    const v = j[k] ?? [];
    if (
      !Array.isArray(v) ||
      v.some((x) => typeof x !== 'object' || x === null || Array.isArray(x))
    ) {
      problems.push({ path: k, message: 'must be a list of objects' });
      return [];
    }
    return v as Json[];
  };
  const agents = list('agents');
  if (agents.length === 0) problems.push({ path: 'agents', message: 'holds no agent' });
  if (agents.length > maxAgents)
    problems.push({
      path: 'agents',
      message: `has ${agents.length} agents; at most ${maxAgents} (agent_files.max_agents)`,
      limit: 'agent_files.max_agents',
    });
  // ids are how the file's agents, blocks and tools name each other
  for (const k of ['agents', 'blocks', 'tools']) {
    const seen = new Set<unknown>();
    list(k).forEach((x, i) => {
      if (seen.has(x.id))
        problems.push({ path: `${k}[${i}].id`, message: 'is not unique in the file' });
      seen.add(x.id);
    });
  }
  // a group's agents are imported on their own: this server has no multi-agent groups
  for (const k of ['files', 'sources'])
    if (list(k).length > 0)
      problems.push({
        path: k,
        message: 'is not supported: no data sources on this server',
      });
  const meta = j.metadata as Json | null | undefined;
  const tools = list('tools');
  const blocks = list('blocks');
  const out = {
    agents,
    tools,
    blocks,
    toolsById: new Map(tools.map((t) => [t.id, t])),
    blocksById: new Map(blocks.map((b) => [b.id, b])),
    ours: typeof meta?.exported_by === 'string' && meta.exported_by.startsWith(`${EXPORTED_BY} `),
  };
  if (problems.length) throw validationFailed(problems, 'agent file is invalid');
  return out;
}

/** A tool's validation problems, at the tool's path in the file (those not listed still counted). */
function prefixProblems(e: unknown, path: string): unknown {
  const details = (e as { details?: { problems?: ValidationProblem[]; more_problems?: number } })
    .details;
  if (!details?.problems) return e;
  return validationFailed(
    details.problems.map((p) => ({ ...p, path: `${path}.${p.path}` })),
    'agent file is invalid',
    details.more_problems,
  );
}
