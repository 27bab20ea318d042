import { Inject, Injectable } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import {
  conflict,
  DomainError,
  notFound,
  ValidationProblem,
  validationFailed,
} from '../common/domain-error';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfig } from '../config/app-config';
import {
  CompactionMode,
  DEFAULT_KEEP_SHARE,
  newerHalf,
  planCompaction,
  summarizerMessages,
} from '../core/loop/compaction';
import { forkRanges, inWindow } from '../core/loop/fork-ranges';
import type { Clock } from '../core/ports';
import { ModelError } from '../models/model-provider';
import { AGENT_PORT, AgentPort, MODELS_PORT, ModelsPort } from './processing.ports';
import { ProcessingRepository, toHistory } from './processing.repository';

/** Letta's `CompactionResponse`; the counts include the system message, as Letta's do. */
export interface CompactionResult {
  summary: string;
  num_messages_before: number;
  num_messages_after: number;
}

export interface CompactionSettings {
  mode: CompactionMode;
  prompt: string | null;
  clipChars: number | null;
  keepShare: number;
}

export const COMPACTION_MODES = [
  'all',
  'sliding_window',
  'self_compact_all',
  'self_compact_sliding_window',
];
const PROMPT_MAX = 10_000;

/**
 * The in-context window of an agent's conversations (Letta's in-context messages): reset-messages and
 * compaction move where it starts; the stored history is never touched. Both refuse while the agent
 * has a batch queued, running or waiting for approval (one batch at a time per agent: the window
 * must not move under a batch).
 */
@Injectable()
export class MessageContextService {
  constructor(
    private readonly repo: ProcessingRepository,
    @Inject(AGENT_PORT) private readonly agents: AgentPort,
    @Inject(MODELS_PORT) private readonly models: ModelsPort,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /** Puts every stored message of the conversation out of context (the summary too). */
  async reset(tenantId: string, agentId: string, conversationId: string | null): Promise<void> {
    await this.agents.get(tenantId, agentId);
    await this.assertIdle(agentId);
    const start = (await this.repo.maxSeq(agentId)) + 1;
    await this.repo.setMessageContext(
      tenantId,
      agentId,
      conversationId,
      { start_seq: start, summary: null },
      this.clock.now(),
    );
  }

  /** The ids of the conversation's in-context messages, oldest first (Letta's `in_context_message_ids`). */
  async inContextMessageIds(agentId: string, conversationId: string | null): Promise<string[]> {
    const context = await this.repo.messageContext(agentId, conversationId);
    return this.repo.inContextMessageIds(agentId, conversationId, context);
  }

  /**
   * Asks the agent's model to summarize the older in-context messages; the summary replaces them in
   * the context window. A model failure changes nothing (502 SUMMARIZATION_FAILED).
   */
  async compact(
    tenantId: string,
    agentId: string,
    conversationId: string | null,
    settings: CompactionSettings,
  ): Promise<CompactionResult> {
    const agent = await this.agents.get(tenantId, agentId);
    await this.assertIdle(agentId);
    const context = await this.repo.messageContext(agentId, conversationId);
    const rows = await this.repo.inContextMessages(agentId, conversationId, context);
    const inContext = rows.map(toHistory);
    const before = 1 + (context?.summary ? 1 : 0) + inContext.length;
    const limits = this.config.processing;
    const plan = planCompaction(
      inContext,
      settings.mode,
      limits.compaction_max_messages,
      settings.keepShare,
    );
    if (!plan) {
      return {
        summary: context?.summary ?? '',
        num_messages_before: before,
        num_messages_after: before,
      };
    }
    let text: string | null;
    const provider = this.models.providerFor(agent.llm_config, tenantId);
    // what the summarizer reads: on a context-window overflow, its newest half, at most
    // models.max_context_retries times (the older ones leave the context unsummarized, as those beyond
    // compaction_max_messages do)
    let summarized = plan.summarized;
    for (let retries = 0; ; retries++) {
      try {
        const res = await provider.complete({
          llmConfig: agent.llm_config,
          messages: summarizerMessages(summarized, context?.summary ?? null, settings.prompt),
          tools: [],
          toolChoice: 'none',
          stream: false,
          batchStep: 0,
          timeoutMs: limits.compaction_timeout_seconds * 1000,
        });
        // NUL dropped: PostgreSQL text cannot hold it, and a summary loses nothing by it
        text = res.content?.replaceAll('\u0000', '').trim() || null;
        break;
      } catch (e) {
        if (!(e instanceof ModelError)) throw e;
        const half = newerHalf(summarized);
        if (
          e.kind === 'context_window_exceeded' &&
          retries < this.config.models.max_context_retries &&
          half.length > 0
        ) {
          summarized = half;
          continue;
        }
        const why =
          e.kind === 'context_window_exceeded'
            ? `the messages do not fit the model's context window (${summarized.length} of them, after ${retries} retries with fewer): ${e.message}`
            : e.message;
        throw summarizationFailed(why, { kind: e.kind, status: e.status ?? null });
      }
    }
    if (!text) throw summarizationFailed('the model answered no summary text', {});
    const clip = Math.min(settings.clipChars ?? Infinity, limits.compaction_max_summary_chars);
    const summary = text.length > clip ? text.slice(0, clip) : text;
    const keptFrom = plan.keepFrom ? inContext.indexOf(plan.keepFrom) : rows.length;
    const start = keptFrom < rows.length ? rows[keptFrom].seq_id : rows.at(-1)!.seq_id + 1;
    await this.repo.setMessageContext(
      tenantId,
      agentId,
      conversationId,
      { start_seq: start, summary },
      this.clock.now(),
    );
    const keptCount = rows.length - keptFrom;
    return { summary, num_messages_before: before, num_messages_after: 2 + keptCount };
  }

  /**
   * Letta's fork: `target` (a new conversation of the agent) shares the source's in-context messages,
   * all of them or up to and including `messageId`, by reference (the rows are not copied), and its
   * compaction summary; what either writes afterwards is its own. Refused while the source has a batch
   * open (409 CONVERSATION_BUSY): a fork must not start in the middle of a turn.
   */
  async fork(
    tenantId: string,
    agentId: string,
    source: string | null,
    target: string,
    messageId: string | null,
  ): Promise<void> {
    const open = await this.repo.openRunIds(tenantId, source, agentId);
    if (open.length > 0) {
      throw conflict(
        'CONVERSATION_BUSY',
        `conversation ${source ?? 'default'} has a run in progress (queued, running or waiting for approval); fork it when it has ended`,
        { run_ids: open },
      );
    }
    const context = await this.repo.messageContext(agentId, source);
    const start = context?.start_seq ?? 0;
    let cut = await this.repo.maxSeq(agentId);
    if (messageId !== null) {
      const m = await this.repo.findMessage(tenantId, messageId);
      if (!m || m.agent_id !== agentId || !inWindow(m, source, context?.inherited ?? null, start))
        throw notFound('in-context message of conversation', messageId);
      cut = m.seq_id;
    }
    const inherited = forkRanges(source, context?.inherited ?? null, start, cut);
    const max = this.config.processing.max_fork_depth;
    if (inherited.length > max) {
      throw validationFailed([
        {
          path: 'conversation_id',
          message: `descends from more than ${max} forks`,
          limit: 'processing.max_fork_depth',
        },
      ]);
    }
    await this.repo.setMessageContext(
      tenantId,
      agentId,
      target,
      // the source's window start and summary: the fork's model call sees what the source's would
      { start_seq: start, summary: context?.summary ?? null, inherited },
      this.clock.now(),
    );
  }

  /** 409 AGENT_BUSY while a batch of the agent is queued, running or parked for approval. */
  private async assertIdle(agentId: string): Promise<void> {
    const open = await this.repo.openBatchIds(agentId);
    if (open.length > 0) {
      throw conflict(
        'AGENT_BUSY',
        `agent ${agentId} has a batch in progress (queued, running or waiting for approval); try again when it has ended`,
        { batch_ids: open },
      );
    }
  }
}

function summarizationFailed(why: string, details: Record<string, unknown>): DomainError {
  return new DomainError(
    'bad_gateway',
    'SUMMARIZATION_FAILED',
    `the model could not summarize the messages (the context is unchanged): ${why}`,
    details,
  );
}

/** Letta's `{compaction_settings?}` body; `model` / `model_settings` other than the agent's are refused. */
export function parseCompactionRequest(body: unknown): CompactionSettings {
  const out: CompactionSettings = {
    mode: 'sliding_window',
    prompt: null,
    clipChars: null,
    keepShare: DEFAULT_KEEP_SHARE,
  };
  if (body === undefined || body === null) return out;
  if (typeof body !== 'object' || Array.isArray(body))
    throw validationFailed([{ path: '', message: 'body must be a JSON object' }]);
  const raw = (body as Record<string, unknown>).compaction_settings;
  if (raw === undefined || raw === null) return out;
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw validationFailed([{ path: 'compaction_settings', message: 'must be an object' }]);
  const s = raw as Record<string, unknown>;
  const problems: ValidationProblem[] = [];
  const at = (k: string) => `compaction_settings.${k}`;
  if (s.mode !== undefined && s.mode !== null) {
    if (typeof s.mode !== 'string' || !COMPACTION_MODES.includes(s.mode))
      problems.push({ path: at('mode'), message: `must be one of ${COMPACTION_MODES.join(', ')}` });
    else out.mode = s.mode.endsWith('all') ? 'all' : 'sliding_window';
  }
  if (s.prompt !== undefined && s.prompt !== null) {
    if (typeof s.prompt !== 'string' || s.prompt.length === 0 || s.prompt.length > PROMPT_MAX)
      problems.push({
        path: at('prompt'),
        message: `must be a text of 1 to ${PROMPT_MAX} characters`,
      });
    else out.prompt = s.prompt;
  }
  if (s.clip_chars !== undefined && s.clip_chars !== null) {
    if (!Number.isInteger(s.clip_chars) || (s.clip_chars as number) < 1)
      problems.push({ path: at('clip_chars'), message: 'must be a positive integer' });
    else out.clipChars = s.clip_chars as number;
  }
  const share = s.sliding_window_percentage;
  if (share !== undefined && share !== null) {
    if (typeof share !== 'number' || !(share >= 0 && share < 1))
      problems.push({
        path: at('sliding_window_percentage'),
        message: 'must be a number in [0, 1)',
      });
    else out.keepShare = share;
  }
  for (const k of ['model', 'model_settings'])
    if (s[k] !== undefined && s[k] !== null)
      problems.push({ path: at(k), message: "is not supported: the agent's own model summarizes" });
  if (problems.length) throw validationFailed(problems);
  return out;
}
