import { LRUCache } from 'lru-cache';
import { Inject, Injectable } from '@nestjs/common';
import { createHash, randomInt } from 'node:crypto';
import stableStringify from 'json-stable-stringify';
import { approxBytes } from '../common/approx-bytes';
import { CLOCK } from '../common/clock';
import { badRequest, conflict, notFound, validationFailed } from '../common/domain-error';
import { assertPrefixedId, ID_GENERATOR, isPrefixedId } from '../common/ids';
import { fitPage, oldestFirst, takenBack } from '../common/list-page';
import { AppConfig, DEFAULT_TENANT } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import type { AgentRecord, MemoryBlock } from '../core/agents/agent-record';
import { AGENT_RELATIONS, AgentRelation, parseAgentInclude } from '../core/agents/agent-include';
import { parseListAgentsQuery } from '../core/agents/list-agents-query';
import { IdentitiesService, IdentityView } from '../identities/identities.service';
import { countProblem } from '../core/limits';
import { NO_BUDGETS } from '../core/loop/budgets';
import { renderSystemPrompt } from '../core/loop/context-builder';
import { nulBytePaths } from '../core/agents/nul-bytes';
import { unstorableKeyPaths } from '../core/agents/unstorable-keys';
import { parseInitialMessages } from '../core/agents/initial-messages';
import { randomAgentName } from '../core/agents/random-agent-name';
import type { MessageCreate } from '../core/loop/message-create';
import { DEFAULT_TIMEZONE } from '../core/agents/timezone';
import {
  AgentDraft,
  AgentValidationContext,
  modelHandle,
  resolveExecutorSettings,
  validateAgentInput,
} from '../core/agents/validate-agent';
import type { Clock, IdGenerator } from '../core/ports';
import { asksConsentFor, canonicalRuleType, withApprovalRules } from '../core/rules/tool-rule';
import type { StoredToolRule, ValidationProblem } from '../core/rules/validate-tool-rules';
import { ToolsService, ToolView } from '../tools/tools.service';
import { AgentEntity } from './agent.entity';
import { EmbeddingsService } from '../models/embeddings/embeddings.service';
import { ModelProvidersService } from '../models/providers/model-providers.service';
import { SecretsService, SecretView } from '../secrets/secrets.service';
import { AgentsRepository } from './agents.repository';
import { BlocksRepository } from './blocks.repository';
import { BlocksService } from './blocks.service';
import { answeringConflicts, isUniqueViolation } from '../database/unique-violation';

/** Supplies `pending_approval` for an agent's responses (the processing module registers one). */
export type PendingApprovalSource = (tenantId: string, agentId: string) => Promise<unknown>;
/** Supplies Letta's `message_ids` (the in-context messages) of one agent (the processing module's). */
export type InContextSource = (agentId: string) => Promise<string[]>;
/** Writes a new agent's `initial_message_sequence` as its first messages (the processing module's). */
export type InitialMessagesWriter = (
  tenantId: string,
  agentId: string,
  messages: MessageCreate[],
) => Promise<void>;

/** `sharesNameWith`: an API-created agent of tenant default that has the name of the file's new agent. */
export interface FileAgentUpsert {
  agent: AgentEntity;
  changed: boolean;
  sharesNameWith?: string;
}

/** An agent with everything its response needs; relations not in `include` are left empty. */
export interface AgentView {
  record: AgentRecord;
  include: ReadonlySet<AgentRelation>;
  tools: ToolView[];
  pendingApproval: unknown;
  /** Letta's `message_ids`: answered for one agent (a list would read every agent's context). */
  messageIds?: string[] | null;
  identities: IdentityView[];
  /** The agent's own secrets, by name (values never leave the store). */
  secrets: SecretView[];
}

const ALL_RELATIONS: ReadonlySet<AgentRelation> = new Set(AGENT_RELATIONS);

/** Every tool name a rule refers to. */
function ruleMentions(rule: StoredToolRule, name: string): boolean {
  const r = rule as Record<string, unknown>;
  const names = [
    r.tool_name,
    r.default_child,
    ...(Array.isArray(r.children) ? (r.children as unknown[]) : []),
    ...(Array.isArray(r.tools) ? (r.tools as unknown[]) : []),
    ...Object.values((r.child_output_mapping as Record<string, unknown> | undefined) ?? {}),
  ];
  return names.includes(name);
}

const draftOf = (a: AgentEntity): AgentDraft => ({
  name: a.name,
  system: a.system,
  description: a.description,
  agent_type: a.agent_type,
  tools: a.tools,
  tool_rules: a.tool_rules,
  blocks: a.blocks,
  llm_config: a.llm_config,
  tags: a.tags,
  metadata: a.metadata,
  tool_executor: a.tool_executor,
  model_script: a.model_script,
  max_steps: a.max_steps,
  budgets: a.budgets ?? NO_BUDGETS,
  client_tools: a.client_tools ?? [],
  embedding_config: a.embedding_config ?? null,
  timezone: a.timezone ?? DEFAULT_TIMEZONE,
  hidden: a.hidden ?? null,
  max_files_open: a.max_files_open ?? null,
  per_file_view_window_char_limit: a.per_file_view_window_char_limit ?? null,
});

/** Agents: create, read, update, delete, memory edits; the single owner of the agents tables. */
@Injectable()
export class AgentsService {
  private pendingApprovalSource: PendingApprovalSource | null = null;
  private inContextSource: InContextSource | null = null;
  private initialMessagesWriter: InitialMessagesWriter | null = null;
  private readonly beforeDelete: ((tenantId: string, agentId: string) => Promise<void>)[] = [];
  private readonly afterDelete: ((tenantId: string, agentId: string) => Promise<void>)[] = [];

  constructor(
    private readonly agents: AgentsRepository,
    private readonly tools: ToolsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    private readonly models: ModelProvidersService,
    private readonly embeddings: EmbeddingsService,
    private readonly secrets: SecretsService,
    private readonly blockStore: BlocksService,
    private readonly blockRows: BlocksRepository,
    private readonly identities: IdentitiesService,
  ) {
    // Agent records are cached only where this process is the database's only writer (SQLite, one
    // process): with several instances an update served by another one would not reach this cache.
    this.records = config.database.url
      ? null
      : new LRUCache({
          max: 10_000,
          maxSize: config.database.record_cache_bytes,
          sizeCalculation: (r) => Math.max(1, approxBytes(r)),
        });
    agents.onChange((id) => this.forget(id));
    blockRows.onChange((id) => this.forget(id));
  }

  private readonly records: LRUCache<string, AgentRecord> | null;

  // ------------------------------------------------------------ hooks and reads for other modules

  /** Lets another module (processing) fill `pending_approval` in agent responses. */
  registerPendingApprovalSource(fn: PendingApprovalSource): void {
    this.pendingApprovalSource = fn;
  }

  /** Lets another module (processing) fill `message_ids` in a retrieved agent. */
  registerInContextSource(fn: InContextSource): void {
    this.inContextSource = fn;
  }

  /** Lets another module (processing) write a new agent's initial messages. */
  registerInitialMessagesWriter(fn: InitialMessagesWriter): void {
    this.initialMessagesWriter = fn;
  }

  /** Lets another module stop an agent's work before the agent is deleted (processing cancels its runs). */
  registerBeforeDelete(fn: (tenantId: string, agentId: string) => Promise<void>): void {
    this.beforeDelete.push(fn);
  }

  /** Lets another module delete what it keeps of an agent once the agent is gone (processing: its history). */
  registerAfterDelete(fn: (tenantId: string, agentId: string) => Promise<void>): void {
    this.afterDelete.push(fn);
  }

  /** The agent as a plain record; 404 for a malformed id or another tenant's agent. */
  /** The agent as the processor uses it; served from `records` when this process is the only writer. */
  async getForTenant(tenantId: string, agentId: string): Promise<AgentRecord> {
    const hit = this.records?.get(agentId);
    if (hit?.tenant_id === tenantId) return hit;
    const record = this.toRecord(await this.load(tenantId, agentId));
    this.records?.set(agentId, record);
    return record;
  }

  /** Drops the cached record of the agent (its row was written elsewhere, or its owner changed). */
  forget(agentId: string): void {
    this.records?.delete(agentId);
  }

  /** Replaces a block's value; respects the block's limit and read_only (DomainError otherwise). */
  async updateMemoryBlock(
    tenantId: string,
    agentId: string,
    label: string,
    newValue: string,
  ): Promise<MemoryBlock> {
    return this.editMemoryBlock(tenantId, agentId, label, () => newValue);
  }

  /**
   * An agent's edit of its block by label (the core memory tools). The block's row is edited in its
   * own transaction, so concurrent edits (through any agent that shares it) do not lose each other.
   */
  async editMemoryBlock(
    tenantId: string,
    agentId: string,
    label: string,
    edit: (current: string) => string,
  ): Promise<MemoryBlock> {
    const { blocks } = await this.load(tenantId, agentId);
    const block = blocks.find((b) => b.label === label);
    if (!block)
      throw badRequest('BLOCK_NOT_FOUND', `no memory block labelled "${label}"`, {
        label,
        labels: blocks.map((b) => b.label),
      });
    return this.blockStore.editValue(tenantId, block.id, edit);
  }

  /**
   * Letta's recompile: the system prompt as the next model call will see it (system + memory blocks).
   * The context is compiled at every model call here, so nothing is stored.
   */
  async systemPrompt(tenantId: string, agentId: string): Promise<string> {
    const a = await this.load(tenantId, agentId);
    return renderSystemPrompt(a.system, a.blocks);
  }

  /** The agent's memory blocks (Letta's `core-memory/blocks`). */
  async blocks(tenantId: string, agentId: string): Promise<MemoryBlock[]> {
    return (await this.load(tenantId, agentId)).blocks;
  }

  /**
   * The agent's blocks oldest first (Letta lists them in its blocks' id order, here the order they were
   * made in); blocks made together keep the agent's order.
   */
  async blocksOldestFirst(tenantId: string, agentId: string): Promise<MemoryBlock[]> {
    const blocks = await this.blocks(tenantId, agentId);
    const made = await this.blockRows.createdAt(
      tenantId,
      blocks.map((b) => b.id),
    );
    return oldestFirst(blocks, (b) => made.get(b.id) ?? null);
  }

  async block(tenantId: string, agentId: string, label: string): Promise<MemoryBlock> {
    const found = (await this.blocks(tenantId, agentId)).find((b) => b.label === label);
    if (!found) throw notFound('memory block', label);
    return found;
  }

  /** An owner's edit of one block over the API, by label (every agent sharing the block sees it). */
  async patchBlock(
    tenantId: string,
    agentId: string,
    label: string,
    body: unknown,
  ): Promise<MemoryBlock> {
    return this.blockStore.update(tenantId, (await this.block(tenantId, agentId, label)).id, body);
  }

  /** Letta's `agents.blocks.attach`: the tenant's block joins the agent's blocks (labels stay unique). */
  async attachBlock(tenantId: string, agentId: string, blockId: string): Promise<AgentView> {
    const agent = await this.load(tenantId, agentId);
    const block = await this.blockStore.get(tenantId, blockId);
    if (agent.blocks.some((b) => b.id === block.id)) return this.answer(tenantId, agent);
    agent.blocks = this.joinBlocks([...agent.blocks, block]);
    agent.updated_at = this.clock.now();
    return this.answer(tenantId, await this.agents.save(agent));
  }

  /** Letta's `agents.blocks.detach`: the block leaves the agent and stays (for other agents, or later). */
  async detachBlock(tenantId: string, agentId: string, blockId: string): Promise<AgentView> {
    const agent = await this.load(tenantId, agentId);
    await this.blockStore.get(tenantId, blockId);
    agent.blocks = agent.blocks.filter((b) => b.id !== blockId);
    agent.updated_at = this.clock.now();
    return this.answer(tenantId, await this.agents.save(agent, { keepUnlinkedBlocks: true }));
  }

  /**
   * A run of the agent ended now (Letta's last_stop_reason, last_run_completion, last_run_duration_ms:
   * from `startedAt`, null when unknown). False when the agent is gone: a run may end after its agent
   * was deleted (it stops the run first).
   */
  async setLastStopReason(
    tenantId: string,
    agentId: string,
    reason: string | null,
    startedAt: number | null = null,
  ): Promise<boolean> {
    const at = this.clock.now();
    const run = {
      last_stop_reason: reason,
      last_run_completion: at,
      last_run_duration_ms: startedAt === null ? null : Math.max(0, at - startedAt),
    };
    const done = await this.agents.setLastStopReason(tenantId, agentId, run, at);
    // the cached record stays, with the fields this write changed
    const hit = this.records?.get(agentId);
    if (hit) this.records!.set(agentId, { ...hit, ...run, updated_at: at });
    return done;
  }

  // ------------------------------------------------------------ the REST API

  async create(tenantId: string, body: unknown): Promise<AgentView> {
    // Letta's initial_message_sequence: checked with the agent's fields, written once the agent exists
    const problems: ValidationProblem[] = [];
    const initial = parseInitialMessages(
      body,
      this.config.limits,
      {
        maxImages: this.config.processing.max_images_per_message,
        maxImageBytes: this.config.processing.max_image_bytes,
      },
      problems,
    );
    const draft = await this.validate(tenantId, body, undefined, problems);
    await this.addDefaultApprovals(tenantId, draft, []);
    const shared = await this.blocksById(tenantId, body);
    if (shared) draft.blocks = this.joinBlocks([...draft.blocks, ...shared]);
    const secrets = this.secrets.agentSecretsIn(body);
    if (secrets) await this.secrets.assertRoomFor(tenantId, null, secrets);
    const identityIds = await this.identityIdsIn(tenantId, body);
    const agent = await this.agents.save(await this.newEntity(tenantId, draft, 'api', null));
    try {
      if (secrets) await this.secrets.replaceOwned(tenantId, agent.id, secrets);
      if (identityIds) await this.identities.setForAgent(tenantId, agent.id, identityIds);
      if (initial?.length && this.initialMessagesWriter)
        await this.initialMessagesWriter(tenantId, agent.id, initial);
    } catch (e) {
      // an agent is created whole or not at all
      await this.delete(tenantId, agent.id).catch(() => undefined);
      throw e;
    }
    return this.answer(tenantId, agent);
  }

  async list(tenantId: string, rawQuery: Record<string, unknown>): Promise<AgentView[]> {
    const { query, problems } = parseListAgentsQuery(rawQuery, this.config.limits);
    problems.push(...nulBytePaths(rawQuery));
    const included = parseAgentInclude(rawQuery);
    problems.push(...included.problems);
    const include = included.include;
    if (problems.length) throw validationFailed(problems, 'query is invalid');
    const cursor = async (id: string | null) => {
      if (id === null) return null;
      const found = isPrefixedId('agent', id)
        ? await this.agents.findForTenant(tenantId, id)
        : null;
      if (!found)
        throw badRequest(
          'UNKNOWN_CURSOR',
          `cursor ${JSON.stringify(id.slice(0, 200))} is not an agent id`,
        );
      return found;
    };
    const rows = await this.agents.list(tenantId, query, {
      after: await cursor(query.after),
      before: await cursor(query.before),
    });
    // weighed again with their tools: each agent's response carries its tools' schemas
    return fitPage(await this.views(tenantId, rows, include), query.maxBytes, takenBack(query));
  }

  /** `query`: Letta's `include` / `include_relationships` (none: every relation). */
  async get(
    tenantId: string,
    agentId: string,
    query: Record<string, unknown> = {},
  ): Promise<AgentView> {
    const include = this.includeOf(query);
    return this.view(tenantId, await this.load(tenantId, agentId), include);
  }

  /** Letta's `agents.retrieve`: the agent with its in-context message ids (`message_ids`). */
  async retrieve(
    tenantId: string,
    agentId: string,
    query: Record<string, unknown> = {},
  ): Promise<AgentView> {
    return this.withMessageIds(await this.get(tenantId, agentId, query));
  }

  async update(tenantId: string, agentId: string, body: unknown): Promise<AgentView> {
    const agent = await this.load(tenantId, agentId);
    const draft = await this.validate(tenantId, body, draftOf(agent));
    // its file finds it by name at every boot: renamed, it would be orphaned and the file make another
    if (agent.source === 'file' && draft.name !== agent.name)
      throw validationFailed(
        [
          {
            path: 'name',
            message: `is its agent file's ("${agent.name}"): rename the agent in its file under config/agents`,
          },
        ],
        'agent is invalid',
      );
    await this.addDefaultApprovals(tenantId, draft, agent.tools);
    // Letta's block_ids on an update is the agent's whole list; blocks left out stay (a detach)
    const shared = await this.blocksById(tenantId, body);
    if (shared) draft.blocks = this.joinBlocks(shared);
    const secrets = this.secrets.agentSecretsIn(body);
    if (secrets) await this.secrets.assertRoomFor(tenantId, agentId, secrets);
    const identityIds = await this.identityIdsIn(tenantId, body);
    Object.assign(agent, draft, { updated_at: this.clock.now() });
    const saved = await this.agents.save(agent, { keepUnlinkedBlocks: shared !== null });
    if (secrets) await this.secrets.replaceOwned(tenantId, agentId, secrets);
    if (identityIds) await this.identities.setForAgent(tenantId, agentId, identityIds);
    return this.answer(tenantId, saved);
  }

  /** Letta's identity attach (idempotent); 404 for another tenant's agent or identity. */
  async attachIdentity(tenantId: string, agentId: string, identityId: string): Promise<AgentView> {
    const agent = await this.load(tenantId, agentId);
    await this.identities.attach(tenantId, agentId, identityId);
    return this.answer(tenantId, agent);
  }

  async detachIdentity(tenantId: string, agentId: string, identityId: string): Promise<AgentView> {
    const agent = await this.load(tenantId, agentId);
    await this.identities.detach(tenantId, agentId, identityId);
    return this.answer(tenantId, agent);
  }

  /** Letta's `GET /v1/identities/{id}/agents`: the agents list, filtered to the identity. */
  async identityAgents(
    tenantId: string,
    identityId: string,
    query: Record<string, unknown>,
  ): Promise<AgentView[]> {
    await this.identities.get(tenantId, identityId); // 404 for another tenant's
    return this.list(tenantId, { ...query, identity_id: identityId, identifier_keys: undefined });
  }

  /** Which of these ids are the tenant's agents (the identities module asks). */
  existing(tenantId: string, ids: string[]): Promise<Set<string>> {
    return this.agents.existing(tenantId, ids);
  }

  /** Names (never values) of the agent's own secrets (Letta's agent-level secrets). */
  async secretNames(tenantId: string, agentId: string): Promise<SecretView[]> {
    await this.load(tenantId, agentId);
    return this.secrets.list(tenantId, agentId);
  }

  async delete(tenantId: string, agentId: string): Promise<void> {
    await this.load(tenantId, agentId); // 404 before anything is stopped
    for (const stop of this.beforeDelete) await stop(tenantId, agentId);
    if (!(await this.agents.remove(tenantId, agentId))) throw notFound('agent', agentId);
    await this.secrets.deleteOwner(tenantId, agentId);
    await this.identities.removeAgent(tenantId, agentId);
    for (const drop of this.afterDelete) await drop(tenantId, agentId);
  }

  /** Letta's approval toggle: adds or removes the tool's requires_approval rule. */
  async setToolApproval(
    tenantId: string,
    agentId: string,
    toolName: string,
    required: boolean,
  ): Promise<AgentView> {
    return this.changeRules(tenantId, agentId, (agent) => {
      if (!agent.tools.includes(toolName))
        throw badRequest('TOOL_NOT_ATTACHED', `the agent has no tool "${toolName}"`, {
          tool_name: toolName,
        });
      const isApproval = (r: StoredToolRule) => asksConsentFor(r, toolName);
      if (!required) agent.tool_rules = agent.tool_rules.filter((r) => !isApproval(r));
      else if (!agent.tool_rules.some(isApproval))
        agent.tool_rules = [
          ...agent.tool_rules,
          { type: 'requires_approval', tool_name: toolName },
        ];
    });
  }

  async attachTool(tenantId: string, agentId: string, toolId: string): Promise<AgentView> {
    const tool = await this.tools.get(tenantId, toolId);
    return this.changeRules(tenantId, agentId, (agent) => {
      if (!agent.tools.includes(tool.name)) agent.tools = [...agent.tools, tool.name];
      if (tool.default_requires_approval)
        agent.tool_rules = withApprovalRules(agent.tool_rules, [tool.name]);
    });
  }

  /**
   * Detaching a tool drops the ordering and counting rules that name it (they could no longer be
   * satisfied) and keeps its consent rules, as Letta keeps every rule: re-attached, it needs consent again.
   */
  async detachTool(tenantId: string, agentId: string, toolId: string): Promise<AgentView> {
    const tool = await this.tools.get(tenantId, toolId);
    return this.changeRules(tenantId, agentId, (agent) => {
      agent.tools = agent.tools.filter((n) => n !== tool.name);
      agent.tool_rules = agent.tool_rules.filter(
        (r) => canonicalRuleType(r.type) === 'requires_consent' || !ruleMentions(r, tool.name),
      );
    });
  }

  /** The tenant's agents that use a tool, with their rules (a tool's update checks them). */
  async usingTool(
    tenantId: string,
    toolName: string,
  ): Promise<{ agent_id: string; tool_rules: StoredToolRule[] }[]> {
    return (await this.agents.usingTool(tenantId, toolName)).map((a) => ({
      agent_id: a.id,
      tool_rules: a.tool_rules,
    }));
  }

  async agentTools(tenantId: string, agentId: string): Promise<ToolView[]> {
    const agent = await this.load(tenantId, agentId);
    return this.tools.resolveViews(tenantId, agent.tools);
  }

  // ------------------------------------------------------------ agent files

  /**
   * Upserts an agent from a file into the default tenant by name. Nothing changes when the file's
   * validated content is what was loaded last time; otherwise the file's content replaces the agent's.
   * Throws DomainError(VALIDATION_FAILED) with the problems' paths.
   */
  /** `fileProblems`: what is wrong with the file beyond the agent's fields (reported with them). */
  async upsertFromFile(
    doc: unknown,
    fileProblems: ValidationProblem[] = [],
  ): Promise<FileAgentUpsert> {
    try {
      return await answeringConflicts(() => this.upsertFileAgent(doc, fileProblems));
    } catch (e) {
      // another instance booting at once created it first (one file agent per name): update that one
      if (!isUniqueViolation(e)) throw e;
      return this.upsertFileAgent(doc, fileProblems);
    }
  }

  private async upsertFileAgent(
    doc: unknown,
    fileProblems: ValidationProblem[],
  ): Promise<FileAgentUpsert> {
    const tenantId = DEFAULT_TENANT;
    const draft = await this.validate(tenantId, doc, undefined, fileProblems);
    // the file's own agent: one a tenant created over the API (or imported) is never the file's
    const existing = await this.agents.findOldestByName(tenantId, draft.name, 'file');
    // Block ids are generated, so they are left out of the hash.
    const hash = createHash('sha256')
      .update(
        stableStringify({ ...draft, blocks: draft.blocks.map(({ id: _id, ...b }) => b) }) ?? '',
      )
      .digest('hex');
    if (existing?.source_hash === hash) return { agent: existing, changed: false };
    if (!existing) {
      // Never taken over; and a tenant's agent of the name must not keep the operator's from booting:
      // both live, and the loader says so (clients that find agents by ?name= see both).
      const sharesName = await this.agents.findOldestByName(tenantId, draft.name, 'api');
      return {
        agent: await this.agents.save(await this.newEntity(tenantId, draft, 'file', hash), {
          operator: true,
        }),
        changed: true,
        sharesNameWith: sharesName?.id,
      };
    }
    const blocks = draft.blocks.map((b) => ({
      ...b,
      id: existing.blocks.find((e) => e.label === b.label)?.id ?? b.id,
    }));
    Object.assign(existing, draft, {
      blocks,
      source_hash: hash,
      updated_at: this.clock.now(),
    });
    return { agent: await this.agents.save(existing, { operator: true }), changed: true };
  }

  // ------------------------------------------------------------ internals

  private async changeRules(
    tenantId: string,
    agentId: string,
    change: (a: AgentEntity) => void,
  ): Promise<AgentView> {
    assertPrefixedId('agent', 'agent', agentId);
    const now = this.clock.now();
    const limits = this.config.limits;
    const done = await this.agents.modify(tenantId, agentId, (agent) => {
      change(agent);
      const tooMany = [
        countProblem('tools', agent.tools.length, 'max_tools_per_agent', limits),
        countProblem('tool_rules', agent.tool_rules.length, 'max_rules_per_agent', limits),
      ].filter((p): p is ValidationProblem => p !== null);
      if (tooMany.length) throw validationFailed(tooMany, 'agent is invalid');
      agent.updated_at = now;
    });
    if (!done) throw notFound('agent', agentId);
    return this.answer(tenantId, done.agent);
  }

  private async load(tenantId: string, agentId: string): Promise<AgentEntity> {
    assertPrefixedId('agent', 'agent', agentId);
    const agent = await this.agents.findForTenant(tenantId, agentId);
    if (!agent) throw notFound('agent', agentId);
    return agent;
  }

  private async validate(
    tenantId: string,
    body: unknown,
    current?: AgentDraft,
    earlierProblems: ValidationProblem[] = [],
  ): Promise<AgentDraft> {
    const ctx: AgentValidationContext = {
      availableTools: await this.tools.availableNames(tenantId),
      models: this.models,
      embeddings: this.embeddings,
      newBlockId: () => this.ids.prefixed('block'),
      newName: () => randomAgentName(randomInt),
      limits: this.config.limits,
      defaultAgentType: this.config.agents.default_agent_type,
    };
    const unstorable = [...nulBytePaths(body), ...unstorableKeyPaths(body)];
    if (unstorable.length) throw validationFailed(unstorable, 'agent is invalid');
    body = await this.withToolIdsAsNames(tenantId, body);
    const { draft, problems } = validateAgentInput(body, ctx, current);
    if (!draft || earlierProblems.length > 0)
      throw validationFailed([...earlierProblems, ...problems], 'agent is invalid');
    return draft;
  }

  /**
   * Letta's `default_requires_approval`: a tool given to the agent (not among `before`) whose declaration
   * asks for it gets a requires_approval rule, so it never runs before a person says yes.
   */
  private async addDefaultApprovals(
    tenantId: string,
    draft: AgentDraft,
    before: readonly string[],
  ): Promise<void> {
    const given = draft.tools.filter((n) => !before.includes(n));
    if (given.length === 0) return;
    const asking = (await this.tools.resolveViews(tenantId, given))
      .filter((t) => t.default_requires_approval)
      .map((t) => t.name);
    draft.tool_rules = withApprovalRules(draft.tool_rules, asking);
    const limits = this.config.limits;
    const tooMany = countProblem(
      'tool_rules',
      draft.tool_rules.length,
      'max_rules_per_agent',
      limits,
    );
    if (tooMany) throw validationFailed([tooMany], 'agent is invalid');
  }

  /** Letta's `block_ids`: the tenant's blocks, by id (null when not given). */
  private async blocksById(tenantId: string, body: unknown): Promise<MemoryBlock[] | null> {
    const ids = (body as Record<string, unknown> | null)?.block_ids;
    if (ids === undefined || ids === null) return null;
    if (!Array.isArray(ids))
      throw validationFailed([{ path: 'block_ids', message: 'must be a list of block ids' }]);
    const limits = this.config.limits;
    const tooMany = countProblem('block_ids', ids.length, 'max_memory_blocks_per_agent', limits);
    if (tooMany) throw validationFailed([tooMany], 'agent is invalid');
    const out: MemoryBlock[] = [];
    for (const [i, id] of ids.entries()) {
      const block = isPrefixedId('block', id)
        ? await this.blockStore.get(tenantId, id).catch(() => null)
        : null;
      if (!block)
        throw validationFailed(
          [{ path: `block_ids[${i}]`, message: 'unknown block id' }],
          'agent is invalid',
        );
      if (!out.some((b) => b.id === block.id)) out.push(block);
    }
    return out;
  }

  /** An agent's blocks: labels unique (the memory tools address them by label), count bounded. */
  private joinBlocks(blocks: MemoryBlock[]): MemoryBlock[] {
    const labels = new Set<string>();
    for (const b of blocks) {
      if (labels.has(b.label))
        throw conflict('BLOCK_LABEL_TAKEN', `two of the agent's blocks are labelled "${b.label}"`, {
          label: b.label,
        });
      labels.add(b.label);
    }
    const tooMany = countProblem(
      'blocks',
      blocks.length,
      'max_memory_blocks_per_agent',
      this.config.limits,
    );
    if (tooMany) throw validationFailed([tooMany], 'agent is invalid');
    return blocks;
  }

  /** Letta clients may name tools by id (`tool_ids`): they join `tools` by name. */
  private async withToolIdsAsNames(tenantId: string, body: unknown): Promise<unknown> {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
    const ids = (body as Record<string, unknown>).tool_ids;
    if (ids === undefined || ids === null) return body;
    if (!Array.isArray(ids))
      throw validationFailed([{ path: 'tool_ids', message: 'must be a list of tool ids' }]);
    const tooMany = countProblem('tool_ids', ids.length, 'max_tools_per_agent', this.config.limits);
    if (tooMany) throw validationFailed([tooMany], 'agent is invalid');
    const names: string[] = [];
    for (const [i, id] of ids.entries()) {
      const tool = isPrefixedId('tool', id)
        ? await this.tools.get(tenantId, id).catch(() => null)
        : null;
      if (!tool)
        throw validationFailed(
          [{ path: `tool_ids[${i}]`, message: 'unknown tool id' }],
          'agent is invalid',
        );
      names.push(tool.name);
    }
    const b = body as Record<string, unknown>;
    // Like Letta, tool_ids on an update replaces the list (together with any `tools` given).
    const base = Array.isArray(b.tools) ? (b.tools as unknown[]) : [];
    return { ...b, tools: [...new Set([...base, ...names])] };
  }

  private async newEntity(
    tenantId: string,
    draft: AgentDraft,
    source: 'api' | 'file',
    hash: string | null,
  ): Promise<AgentEntity> {
    // Strictly increasing creation times keep "newest first" exact for agents made in the same millisecond.
    const latest = (await this.agents.latestCreatedAt(tenantId)) ?? 0;
    const now = Math.max(this.clock.now(), latest + 1);
    return Object.assign(new AgentEntity(), draft, {
      id: this.ids.prefixed('agent'),
      tenant_id: tenantId,
      last_stop_reason: null,
      last_run_completion: null,
      last_run_duration_ms: null,
      source,
      source_hash: hash,
      created_at: now,
      updated_at: now,
    });
  }

  private toRecord(a: AgentEntity): AgentRecord {
    const d = this.config.tool_executor;
    return {
      ...draftOf(a),
      id: a.id,
      tenant_id: a.tenant_id,
      model: modelHandle(a.llm_config),
      tool_executor: resolveExecutorSettings(a.tool_executor, d),
      last_stop_reason: a.last_stop_reason,
      last_run_completion: a.last_run_completion ?? null,
      last_run_duration_ms: a.last_run_duration_ms ?? null,
      source: a.source,
      created_at: a.created_at,
      updated_at: a.updated_at,
    };
  }

  private includeOf(query: Record<string, unknown>): ReadonlySet<AgentRelation> {
    const { include, problems } = parseAgentInclude(query);
    problems.push(...nulBytePaths(query));
    if (problems.length) throw validationFailed(problems, 'query is invalid');
    return include;
  }

  /** Letta's `identity_ids` on create or update, checked; undefined when the body has none. */
  private async identityIdsIn(tenantId: string, body: unknown): Promise<string[] | undefined> {
    if (typeof body !== 'object' || body === null) return undefined;
    const ids = (body as Record<string, unknown>).identity_ids;
    if (ids === undefined || ids === null) return undefined;
    return this.identities.checkIds(tenantId, ids, 'identity_ids');
  }

  /**
   * One agent as a route that answers it (Letta's AgentState: a create, an update, an attach or detach
   * answers what a retrieve would), with its in-context message ids.
   */
  private async answer(tenantId: string, agent: AgentEntity): Promise<AgentView> {
    return this.withMessageIds(await this.view(tenantId, agent));
  }

  private async withMessageIds(view: AgentView): Promise<AgentView> {
    if (this.inContextSource) view.messageIds = await this.inContextSource(view.record.id);
    return view;
  }

  private async view(
    tenantId: string,
    agent: AgentEntity,
    include: ReadonlySet<AgentRelation> = ALL_RELATIONS,
  ): Promise<AgentView> {
    return (await this.views(tenantId, [agent], include))[0];
  }

  /** Loads only the relations asked for: each is one query for the whole page. */
  private async views(
    tenantId: string,
    agents: AgentEntity[],
    include: ReadonlySet<AgentRelation> = ALL_RELATIONS,
  ): Promise<AgentView[]> {
    const ids = agents.map((a) => a.id);
    const names = include.has('tools') ? [...new Set(agents.flatMap((a) => a.tools))] : [];
    const byName = new Map(
      (await this.tools.resolveViews(tenantId, names)).map((t) => [t.name, t]),
    );
    const identities = include.has('identities')
      ? await this.identities.forAgents(tenantId, ids)
      : new Map<string, IdentityView[]>();
    const secrets = include.has('secrets')
      ? await this.secrets.listForOwners(tenantId, ids)
      : new Map<string, SecretView[]>();
    const pending = include.has('pending_approval') ? this.pendingApprovalSource : null;
    return Promise.all(
      agents.map(async (a) => ({
        record: this.toRecord(a),
        include,
        tools: include.has('tools')
          ? a.tools.map((n) => byName.get(n)).filter((t): t is ToolView => t !== undefined)
          : [],
        pendingApproval: pending ? await pending(tenantId, a.id) : null,
        identities: identities.get(a.id) ?? [],
        secrets: secrets.get(a.id) ?? [],
      })),
    );
  }
}
