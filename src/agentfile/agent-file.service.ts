import { Inject, Injectable } from '@nestjs/common';
import { safeLlmConfig } from '../agents/agent-response.mapper';
import { AgentsService } from '../agents/agents.service';
import { CLOCK } from '../common/clock';
import { badRequest, notFound, validationFailed, ValidationProblem } from '../common/domain-error';
import { ID_GENERATOR } from '../common/ids';
import { APP_VERSION } from '../common/version';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ConversationsService } from '../conversations/conversations.service';
import { fromAfMessages, toAfMessages } from '../core/agentfile/agent-file-messages';
import { renderSystemPrompt } from '../core/loop/context-builder';
import type { Clock, IdGenerator } from '../core/ports';
import { NewMessage, ProcessingRepository } from '../processing/processing.repository';
import { headerPlaceholders } from '../tools/tool-declaration';
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
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
  ) {}

  async export(
    tenantId: string,
    agentId: string,
    opts: { scrubMessages: boolean; conversationId: string | null },
  ): Promise<Json> {
    const view = await this.agents.get(tenantId, agentId);
    let conversationId: string | null = null;
    if (opts.conversationId) {
      const target = await this.conversations.target(tenantId, opts.conversationId, agentId);
      if (target.agentId !== agentId) throw notFound('conversation of agent', opts.conversationId);
      conversationId = target.conversationId;
    }
    const a = view.record;
    const blocks = a.blocks.map((b, i) => ({
      id: `block-${i}`,
      label: b.label,
      value: b.value,
      limit: b.limit,
      description: b.description,
      read_only: b.read_only,
      metadata: {},
    }));
    const dropped: string[] = [];
    const tools = view.tools.map((t, i) => ({ ...this.exportTool(t, dropped), id: `tool-${i}` }));

    let messages: Json[] = [];
    let inContext: string[] = [];
    if (!opts.scrubMessages) {
      const context = await this.messages.messageContext(agentId, conversationId);
      const rows = await this.messages.inContextMessages(
        agentId,
        conversationId,
        { start_seq: 0, inherited: context?.inherited ?? null },
        this.config.agent_files.max_messages,
      );
      const system = renderSystemPrompt(a.system, a.blocks);
      const out = toAfMessages(rows, system, rows[0]?.created_at ?? this.clock.now());
      messages = out.messages as unknown as Json[];
      const start = context?.start_seq ?? 0;
      inContext = [
        out.messages[0].id,
        ...new Set(rows.filter((r) => r.seq_id >= start).flatMap((r) => out.idOf.get(r.id) ?? [])),
      ];
    }
    const agent: Json = {
      id: 'agent-0',
      name: a.name,
      system: a.system,
      description: a.description,
      agent_type: 'letta_v1_agent',
      llm_config: safeLlmConfig(a.llm_config),
      tags: a.tags,
      metadata: a.metadata,
      tool_rules: a.tool_rules,
      tool_ids: tools.map((t) => t.id),
      block_ids: blocks.map((b) => b.id),
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
    return {
      agents: [agent],
      groups: [],
      blocks,
      files: [],
      sources: [],
      tools,
      mcp_servers: [],
      skills: [],
      metadata: {
        exported_by: `rulebound-agent-server ${APP_VERSION}`,
        ...(dropped.length ? { dropped_headers: dropped.join(', ') } : {}),
      },
      created_at: new Date(this.clock.now()).toISOString(),
    };
  }

  /** A tool as Letta's ToolSchema; an http tool keeps only headers that reference a secret by name. */
  private exportTool(t: ToolView, dropped: string[]): Json {
    const out = toToolResponse(t);
    if (t.http) {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(t.http.headers ?? {})) {
        if (headerPlaceholders({ [k]: v }).length > 0) headers[k] = v;
        else dropped.push(`${t.name}.${k}`);
      }
      out.http = { ...t.http, headers };
    }
    return out;
  }

  async import(
    tenantId: string,
    file: Buffer,
    opts: ImportOptions,
  ): Promise<{ agent_ids: string[] }> {
    const af = parseAgentFile(file);
    const agent = af.agents[0];
    const problems: ValidationProblem[] = [];

    const rawMessages = opts.stripMessages || !Array.isArray(agent.messages) ? [] : agent.messages;
    const maxMessages = this.config.agent_files.max_messages;
    if (rawMessages.length > maxMessages)
      throw validationFailed([
        {
          path: 'agents[0].messages',
          message: `has ${rawMessages.length} items; at most ${maxMessages} (agent_files.max_messages)`,
          limit: 'agent_files.max_messages',
        },
      ]);
    const inContextIds = Array.isArray(agent.in_context_message_ids)
      ? agent.in_context_message_ids.filter((x): x is string => typeof x === 'string')
      : [];
    const imported = fromAfMessages(rawMessages, {
      systemPromptId: inContextIds[0] ?? null,
      path: 'agents[0].messages',
      images: {
        maxImages: this.config.processing.max_images_per_message,
        maxImageBytes: this.config.processing.max_image_bytes,
      },
      innerThoughts: typeof agent.agent_type === 'string' && agent.agent_type.startsWith('memgpt'),
    });
    problems.push(...imported.problems);

    const byId = <T extends Json>(list: T[], ids: unknown, path: string): T[] =>
      (Array.isArray(ids) ? ids : []).flatMap((id, i) => {
        const found = list.find((x) => x.id === id);
        if (!found) problems.push({ path: `${path}[${i}]`, message: `names no entry of the file` });
        return found ? [found] : [];
      });
    const fileTools = byId(af.tools, agent.tool_ids, 'agents[0].tool_ids');
    const fileBlocks = byId(af.blocks, agent.block_ids, 'agents[0].block_ids');
    if (problems.length) throw validationFailed(problems, 'agent file is invalid');

    // the file's http tools the tenant lacks are created (validated as POST /v1/tools/ does)
    const known = await this.tools.availableNames(tenantId);
    const created: string[] = [];
    const body: Json = {
      name: opts.name ?? (opts.appendCopySuffix ? `${str(agent.name)}_copy` : agent.name),
      system: agent.system,
      description: agent.description ?? null,
      tool_rules: agent.tool_rules ?? [],
      tags: agent.tags ?? [],
      metadata: agent.metadata ?? null,
      memory_blocks: fileBlocks.map((b) => ({
        label: b.label,
        value: b.value,
        limit: b.limit,
        description: b.description ?? null,
        read_only: b.read_only ?? false,
      })),
      tools: fileTools.map((t) => t.name),
      include_base_tools: false,
      ...(opts.model ? { model: opts.model } : { llm_config: agent.llm_config }),
      ...(opts.secrets ? { secrets: opts.secrets } : {}),
    };
    for (const f of EXTENSION_FIELDS) if (agent[f] != null) body[f] = agent[f];
    let agentId: string;
    try {
      for (const t of fileTools) {
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
        created.push(tool.id);
      }
      agentId = (await this.agents.create(tenantId, body)).record.id;
    } catch (e) {
      for (const id of created) await this.tools.delete(tenantId, id);
      throw e;
    }

    const turnSteps = new Map<number, string>();
    const rows: NewMessage[] = imported.messages.map((m) => {
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
    const stored = await this.messages.append(agentId, rows);
    // Letta's in-context list: what is not in it is history only (the system prompt first, skipped)
    if (inContextIds.length > 0 && stored.length > 0) {
      const inContext = new Set(inContextIds);
      const first = imported.messages.findIndex((m) => inContext.has(m.fileId));
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
    return { agent_ids: [agentId] };
  }
}

const str = (v: unknown) => (typeof v === 'string' ? v : '');

interface AgentFile {
  agents: Json[];
  tools: Json[];
  blocks: Json[];
}

/** The file's JSON (double-encoded JSON too, as Letta accepts), with exactly one agent and no data sources. */
function parseAgentFile(file: Buffer): AgentFile {
  let json: unknown;
  try {
    json = JSON.parse(file.toString('utf8'));
    if (typeof json === 'string') json = JSON.parse(json);
  } catch {
    throw badRequest('AGENT_FILE_INVALID', 'the agent file is not JSON');
  }
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
  if (agents.length !== 1)
    problems.push({
      path: 'agents',
      message: `must hold exactly one agent (has ${agents.length})`,
    });
  for (const k of ['groups', 'files', 'sources'])
    if (list(k).length > 0)
      problems.push({
        path: k,
        message: 'is not supported: no groups or data sources on this server',
      });
  const out = { agents, tools: list('tools'), blocks: list('blocks') };
  if (problems.length) throw validationFailed(problems, 'agent file is invalid');
  return out;
}

/** A tool's validation problems, at the tool's path in the file. */
function prefixProblems(e: unknown, path: string): unknown {
  const details = (e as { details?: { problems?: ValidationProblem[] } }).details;
  if (!details?.problems) return e;
  return validationFailed(
    details.problems.map((p) => ({ ...p, path: `${path}.${p.path}` })),
    'agent file is invalid',
  );
}
