import { Inject, Injectable, Logger } from '@nestjs/common';
import type { AgentRecord } from '../core/agents/agent-record';
import {
  type AgentToolSetup,
  type ExecutionMeta,
  type PassState,
  parksOn,
  type ToolCallRequest,
  type ToolErrorType,
  type ToolOutcome,
} from '../core/executor/contracts';
import { continuesAfterTools, offersHeartbeat } from '../core/agents/agent-type';
import { modelHandle } from '../core/agents/validate-agent';
import { decideAfterTurn, LoopDecision, type OutcomeView } from '../core/loop/loop-decision';
import { heartbeatReason, heartbeatText } from '../core/loop/heartbeat-message';
import { BatchBudgets, exhaustedBudget, resolveBudgets } from '../core/loop/budgets';
import { runStatusFor, StopReason } from '../core/loop/stop-reason';
import type { Clock, IdGenerator } from '../core/ports';
import type { ToolDefinition } from '../core/tools/tool-definition';
import { AGENT_LEASES, type AgentLeases } from '../cluster/agent-leases';
import { CLOCK } from '../common/clock';
import { ID_GENERATOR } from '../common/ids';
import { RunEvent, RunEventsBus, ToolOutcomeFacts } from '../common/run-events';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { MEMORY_EDIT_TOOLS } from '../tools/builtin-tools';
import {
  ModelError,
  type ModelProvider,
  type ModelResponse,
  type ToolSchema,
} from '../models/model-provider';
import type { MessageEntity, MessageType } from './entities/message.entity';
import {
  awaitingAnswer,
  type ClientToolSpec,
  type ParkedCall,
  storedParks,
  type RunEntity,
  type RunUsage,
  type TurnCall,
} from './entities/run.entity';
import type { StepEntity } from './entities/step.entity';
import {
  addModelUsage,
  EMPTY_USAGE,
  mapMessage,
  MappedMessage,
  toLettaMessage,
} from './message.mapper';
import { withoutImages } from '../core/loop/content-parts';
import { renderRefusal } from '../core/rules/render-refusal';
import { ruleIndexFor } from '../core/rules/rule-index';
import { RunCallbacks } from './run-callbacks';
import { RunChunks } from './run-chunks';
import { TenantQuotas } from '../quotas/tenant-quotas';
import { errorTypeOf } from './run-error';
import { parseArgs, sendMessageText } from '../core/loop/tool-arguments';
import { uniqueCallIds } from '../core/loop/tool-call-ids';
import {
  inputMessageRows,
  MessageContext,
  NewMessage,
  newMessageRow,
  ParkedBatch,
  ProcessingRepository,
  type RunEnd,
} from './processing.repository';
import {
  AGENT_PORT,
  AgentPort,
  EXECUTOR_PORT,
  ExecutorPort,
  MODELS_PORT,
  ModelsPort,
  TOOLS_PORT,
  ToolsPort,
} from './processing.ports';

/** How many times a run's write is tried before the run is left to recovery (a dropped connection passes). */
const WRITE_ATTEMPTS = 3;
/** The wait before each further attempt. */
const WRITE_RETRY_MS = [100, 400];

/**
 * A write of the run kept failing (a full disk, a lost database): the run is left `running`, and the
 * recovery of the agent's next tenure ends it from what is stored (a started call's outcome unknown).
 */
export class RunNotStored extends Error {
  constructor(runId: string, cause: unknown) {
    super(`run ${runId}: a write could not be stored: ${String(cause)}`, { cause });
  }
}

/** Why a run's abort signal fired. */
type AbortWhy = 'cancelled' | 'interrupted' | 'max_wall_time';

class RunStop extends Error {
  constructor(
    readonly reason: StopReason,
    readonly detail: string | null = null,
    /** The run's error type (run-error.ts) when it stops on an error of ours that has one. */
    readonly errorType: string | null = null,
  ) {
    super(detail ?? reason);
  }
}

/** Everything one run needs while it is processed. */
interface RunContext {
  run: RunEntity;
  /** The lease tenure the run started under: its writes pass only while it lasts. */
  tenure: string | null;
  agent: AgentRecord;
  tools: ToolDefinition[];
  setup: AgentToolSetup;
  provider: ModelProvider;
  controller: AbortController;
  meta: ExecutionMeta;
  usage: RunUsage;
  /** Model calls already made in this batch (earlier runs of a resumed batch included). */
  batchSteps: number;
  /** Tokens used by earlier runs of a resumed batch (this run's are in `usage`). */
  earlierTokens: number;
  budgets: BatchBudgets;
  startedAt: number;
  /** When the run's first model answer began to arrive (the CLOCK's ms); null before it. */
  firstTokenAt: number | null;
  /** The batch's user message: always kept in context. */
  currentMessageId: string | null;
  /** Where the conversation's context starts (reset, compaction), read once per run. */
  messageContext: MessageContext | null;
  /** The agent's model accepts images; else image parts reach it as a text note. */
  vision: boolean;
  parked: ParkedCall[] | null;
  /** The parked batch this continuation resumes, when it parked in this process (else read back). */
  resumed: ParkedBatch | null;
  produced: MappedMessage[];
  /** Set by a graceful shutdown: end at the next step boundary. */
  stopAtBoundary: boolean;
  /** Resolves once the run is no longer processed here (it ended, or was left to recovery). */
  stopped: Promise<void>;
  markStopped: () => void;
  /** The last step's offered tools (by the allowed names), kept while the next step is allowed the same. */
  offer?: ToolOffer;
}

/** A turn's calls stored `_held` (with the model's arguments): shown at the turn's end unless they park. */
interface HeldCalls {
  ids: Set<string>;
  argsText: Map<string, string>;
}

/** The returns of a turn's calls, stored as each call finished (`stored`: the ones stored shown). */
interface StoredReturns {
  settled: (o: ToolOutcome) => Promise<void>;
  stored: ReadonlySet<ToolOutcome>;
  held?: HeldCalls;
}

interface ToolOffer {
  allowed: readonly string[];
  schemas: ToolSchema[];
  /** The schemas' tokens, reserved in the context window. */
  tokens: number;
}

export interface RunResult {
  /** The run as it ended. */
  run: RunEntity;
  /** What the run produced (the request's own messages left out). */
  messages: MappedMessage[];
}

/**
 * The AgentProcessor: one batch (or one continuation of a parked batch) per run. Builds the context,
 * offers the tools the executor allows, calls the model, persists every message before the next step,
 * executes the calls through the ToolExecutor and applies the pure loop decision (src/core/loop).
 */
@Injectable()
export class AgentProcessor {
  private readonly logger = new Logger('AgentProcessor');
  private readonly active = new Map<string, RunContext>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    private readonly repo: ProcessingRepository,
    private readonly bus: RunEventsBus,
    @Inject(AGENT_PORT) private readonly agents: AgentPort,
    @Inject(TOOLS_PORT) private readonly toolsPort: ToolsPort,
    @Inject(MODELS_PORT) private readonly models: ModelsPort,
    @Inject(EXECUTOR_PORT) private readonly exec: ExecutorPort,
    @Inject(AGENT_LEASES) private readonly leases: AgentLeases,
    private readonly callbacks: RunCallbacks,
    private readonly chunks: RunChunks,
    private readonly quotas: TenantQuotas,
  ) {}

  isActive(runId: string): boolean {
    return this.active.has(runId);
  }

  activeRunIds(agentId?: string): string[] {
    return [...this.active.values()]
      .filter((c) => !agentId || c.run.agent_id === agentId)
      .map((c) => c.run.id);
  }

  /** Aborts a running run (model call and tool get the signal); false when it is not running here. */
  abort(runId: string, why: AbortWhy): boolean {
    const ctx = this.active.get(runId);
    if (!ctx) return false;
    if (!ctx.controller.signal.aborted) ctx.controller.abort(why);
    return true;
  }

  /** Aborts a run going here and resolves once it is no longer processed here (at once when it is not). */
  async stop(runId: string, why: AbortWhy): Promise<void> {
    const ctx = this.active.get(runId);
    if (!ctx) return;
    this.abort(runId, why);
    await ctx.stopped;
  }

  /** Graceful shutdown: every running run ends at its next step boundary. */
  stopAllAtBoundary(): void {
    for (const ctx of this.active.values()) ctx.stopAtBoundary = true;
  }

  /**
   * Processes one queued run to its end (failures end it as failed). Throws LEASE_LOST when this
   * instance no longer holds the agent in the tenure the run started under: before starting the run (it
   * stays queued), or while it ran (it stays `running`: the fence refused its writes, so what it had not
   * stored, its end included, is written by the recovery of whichever instance holds the agent next, this
   * one included). Throws RunNotStored, the run left `running` in the same way, when its writes fail.
   */
  async process(queued: RunEntity): Promise<RunResult | null> {
    const now = this.clock.now();
    const tenure = this.leases.tenure(queued.agent_id);
    if (!(await this.repo.claimRun(queued, now, tenure))) return null;
    const run: RunEntity = { ...queued, status: 'running', started_at: now };
    const controller = new AbortController();
    let markStopped!: () => void;
    const stopped = new Promise<void>((resolve) => (markStopped = resolve));
    const ctx: RunContext = {
      run,
      tenure,
      agent: null as unknown as AgentRecord,
      tools: [],
      setup: null as unknown as AgentToolSetup,
      provider: null as unknown as ModelProvider,
      controller,
      meta: {
        tenantId: run.tenant_id,
        agentId: run.agent_id,
        runId: run.id,
        batchId: run.batch_id,
        signal: controller.signal,
        tenure,
      },
      usage: { ...EMPTY_USAGE },
      batchSteps: 0,
      earlierTokens: 0,
      budgets: resolveBudgets({}, {}, this.config.processing),
      startedAt: now,
      firstTokenAt: null,
      currentMessageId: null,
      messageContext: null,
      vision: false,
      parked: null,
      resumed: null,
      produced: [],
      stopAtBoundary: false,
      stopped,
      markStopped,
    };
    this.active.set(run.id, ctx);
    this.publish(ctx, 'run.started', { batch_id: run.batch_id });

    let stop: StopReason;
    let detail: string | null = null;
    let errorType: string | null = null;
    let wallTimer: NodeJS.Timeout | undefined;
    try {
      await this.load(ctx);
      // the CLOCK is checked between steps; this timer aborts a model call or tool that outlasts the budget
      wallTimer = setTimeout(() => this.abort(run.id, 'max_wall_time'), ctx.budgets.maxBatchMs);
      wallTimer.unref();
      stop = await this.runBatch(ctx);
    } catch (e) {
      if (leftToRecovery(e)) {
        // Ending it here would leave its unanswered calls without a return: no recovery runs for a run
        // already ended. Recovery ends it from what is stored, giving every started call a return.
        this.leaveToRecovery(ctx);
        throw e;
      }
      ({ stop, detail } = this.stopFor(ctx, e));
      errorType = e instanceof RunStop ? e.errorType : errorTypeOf(e);
      // a run that failed before its first write (no model, say) still keeps what the client sent
      if ((e as { code?: string })?.code !== 'NOT_FOUND')
        try {
          await this.writeInput(ctx);
        } catch (w) {
          this.leaveToRecovery(ctx); // (RunNotStored, LEASE_LOST) recovery stores the input
          throw w;
        }
    } finally {
      clearTimeout(wallTimer);
    }
    return this.finish(ctx, stop, detail, errorType);
  }

  /** Stores the run's input messages, once. */
  private async writeInput(ctx: RunContext): Promise<void> {
    if (ctx.currentMessageId !== null || ctx.run.input.messages.length === 0) return;
    const rows = inputMessageRows(ctx.run, () => this.ids.prefixed('message'), this.clock.now());
    ctx.currentMessageId = (await this.write(ctx, rows))[0].id;
  }

  /** The agent as its run sees it: with Letta's `override_model` the run's model, the agent's own untouched. */
  private async agentOf(run: RunEntity): Promise<AgentRecord> {
    const agent = await this.agents.get(run.tenant_id, run.agent_id);
    return run.input.override_model ? { ...agent, llm_config: run.input.override_model } : agent;
  }

  private async load(ctx: RunContext): Promise<void> {
    const { run } = ctx;
    // taken first: a continuation that fails to load (its agent deleted) leaves nothing behind
    if (run.input.kind === 'resume')
      ctx.resumed = this.repo.takeParked(run.agent_id, run.input.resumes_run_id ?? '') ?? null;
    ctx.agent = await this.agentOf(run);
    ctx.messageContext = ctx.resumed
      ? ctx.resumed.messageContext
      : await this.repo.messageContext(run.agent_id, run.conversation_id);
    ctx.tools = [
      ...(await this.toolsPort.resolve(run.tenant_id, ctx.agent.tools)),
      ...(run.input.client_tools ?? []).map(clientToolDefinition),
    ];
    ctx.setup = this.exec.setupFor(ctx.agent, ctx.tools);
    ctx.provider = this.models.providerFor(ctx.agent.llm_config, run.tenant_id);
    ctx.vision = this.models.acceptsImages(ctx.agent.llm_config);
    ctx.budgets = resolveBudgets(
      { max_steps: run.input.max_steps, ...run.input.budgets },
      { max_steps: ctx.agent.max_steps, ...ctx.agent.budgets },
      this.config.processing,
    );
    if (run.input.kind === 'resume') {
      const spent = ctx.resumed?.spent ?? (await this.repo.batchSpent(run.batch_id));
      ctx.batchSteps = spent.steps;
      ctx.earlierTokens = spent.tokens;
    }
  }

  private async runBatch(ctx: RunContext): Promise<StopReason> {
    const { run } = ctx;
    // a message run's batch was created with the run (it runs once): it has no stored state to read
    let pass = this.exec.executor.newPass(
      ctx.setup,
      run.batch_id,
      run.input.kind === 'message' ? 'new' : undefined,
    );
    if (run.input.kind === 'resume') {
      const resumed = await this.resumeParked(ctx);
      if (typeof resumed === 'string') return resumed;
      pass = resumed;
    }
    await this.writeInput(ctx);
    for (;;) {
      const outcome = await this.runPass(ctx, pass);
      if (outcome.kind === 'stop') return outcome.reason;
      // heartbeat (its message already stored with the turn): a new pass of the same batch
      pass = this.exec.executor.newPass(ctx.setup, run.batch_id, pass.batch);
    }
  }

  /**
   * A continuation of a parked batch: the parked calls run (or are refused) through the executor first,
   * in the pass they were made in. Answers how the batch ends here, or the pass it goes on in: that same
   * pass, so the rules it met still hold and the ones it set (a child rule after an approved parent) apply.
   */
  private async resumeParked(ctx: RunContext): Promise<StopReason | PassState> {
    const { run } = ctx;
    const parkedRun =
      ctx.resumed?.run ?? (await this.repo.findRunById(run.input.resumes_run_id ?? ''));
    const calls = parkedRun?.parked ?? [];
    const parkedPass = calls[0]?.pass;
    const pass: PassState = parkedPass
      ? structuredClone(parkedPass)
      : this.exec.executor.newPass(ctx.setup, run.batch_id);
    if (run.input.approvals?.length) {
      // Letta's ApprovalReturn and ToolReturn items; the legacy fields repeat the first ApprovalReturn
      const approvals = run.input.approvals.map((a) =>
        a.tool_return !== undefined
          ? {
              type: 'tool',
              tool_call_id: a.tool_call_id,
              tool_return: a.tool_return,
              status: a.status ?? 'success',
            }
          : {
              type: 'approval',
              tool_call_id: a.tool_call_id,
              approve: a.approve,
              reason: a.reason ?? null,
            },
      );
      const first = approvals.find((a) => a.type === 'approval');
      await this.write(ctx, [
        this.msg(ctx, 'approval_response_message', {
          approvals,
          approve: first?.approve ?? null,
          approval_request_id: first?.tool_call_id ?? null,
          reason: first?.reason ?? null,
        }),
      ]);
    }
    if (run.input.cancel) {
      await this.persistOutcomes(
        ctx,
        calls.map((c) =>
          // a held call was never judged, so never refused: the cancel stopped it before its turn came
          c.deferred ? cancelledOutcome(c) : deniedOutcome(c, 'cancelled by the user'),
        ),
        (id) => calls.find((c) => c.tool_call_id === id)?.step_id ?? null,
        pass,
      );
      return 'cancelled';
    }
    if (calls.length > 0) {
      this.publish(ctx, 'tools.executing', {
        step: ctx.batchSteps,
        tools: calls.map((c) => c.name),
      });
      // in the turn's order (the pass history follows it): the client's answers for its tools are
      // recorded as their results, the rest run here; a client call the client did not run is refused
      const answers = new Map((run.input.approvals ?? []).map((a) => [a.tool_call_id, a]));
      const refusedByClient = new Map<string, ToolOutcome>();
      const goOn: ToolCallRequest[] = [];
      for (const c of calls) {
        const call = {
          toolCallId: c.tool_call_id,
          name: c.name,
          arguments: c.arguments,
          stepId: c.step_id,
        };
        if (c.deferred) {
          // held: judged now as a call just made (a request of its tool_call_id is an older call's)
          goOn.push({ ...call, consentRequestId: null });
          continue;
        }
        if (!c.client) {
          // the request it parked with is its consent (the newest of its id, if it has none stored)
          goOn.push({ ...call, consentRequestId: c.request_id ?? undefined });
          continue;
        }
        // (or the answer recovery carried from a continuation that died before storing it)
        const a = answers.get(c.tool_call_id) ?? c.client.answer;
        if (a?.tool_return !== undefined)
          goOn.push({
            ...call,
            clientResult: {
              status: a.status ?? 'success',
              value: a.tool_return,
              startedAt: c.client.started_at,
              heartbeat: c.client.heartbeat,
            },
          });
        else
          refusedByClient.set(
            c.tool_call_id,
            deniedOutcome(c, a?.reason ?? 'the client did not run it'),
          );
      }
      const stepOf = new Map(calls.map((c) => [c.tool_call_id, c.step_id]));
      const returns = this.storingReturns(ctx, (id) => stepOf.get(id) ?? null);
      const wentOn = await this.exec.executor.executeBatch(
        ctx.setup,
        pass,
        goOn,
        ctx.meta,
        returns.settled,
      );
      const outcomes = calls.map(
        (c) =>
          refusedByClient.get(c.tool_call_id) ??
          wentOn[goOn.findIndex((g) => g.toolCallId === c.tool_call_id)],
      );
      const turn = calls[0].turn ? mergeTurn(calls[0].turn, outcomes) : null;
      const parkedAgain = await this.persistOutcomes(
        ctx,
        outcomes,
        (id) => stepOf.get(id) ?? null,
        pass,
        turn,
        returns,
      );
      if (parkedAgain.length) {
        ctx.parked = parkedAgain;
        return 'requires_approval';
      }
      throwIfAborted(ctx);
      // A decision returns control to the model (as the v1 loop does after calls that ran) unless the
      // turn's rules end the batch: an exit_loop call that ran beside the parked ones ends it here.
      // (A batch parked before turns were kept has no turn: it continues, as it did then.)
      if (turn) {
        const decision = decideAfterTurn({
          outcomes: turn,
          pendingExitRequirements: await this.exec.executor.pendingExitRequirements(
            ctx.setup,
            pass,
          ),
          exitRequested: this.exec.executor.shouldExitLoop(pass),
          rules: ctx.agent.tool_rules,
          continueAfterTools: true,
          remindersGiven: 0,
          maxReminders: this.config.processing.max_reminders,
        });
        if (decision.kind === 'end') return decision.stopReason;
        // the MemGPT loop goes on after a heartbeat message, as after any turn (the step is the call's)
        await this.write(
          ctx,
          this.heartbeatRows(ctx, decision, turn, calls[calls.length - 1].step_id),
        );
      }
    }
    throwIfAborted(ctx);
    return pass;
  }

  /**
   * The schemas of the tools the executor allows this step, and their tokens: most steps of a run are
   * allowed the same tools, so they are built and counted once (the run's tools do not change under it).
   */
  private offer(ctx: RunContext, allowed: readonly string[]): ToolOffer {
    const last = ctx.offer;
    if (
      last &&
      last.allowed.length === allowed.length &&
      last.allowed.every((n, i) => n === allowed[i])
    )
      return last;
    const heartbeat = offersHeartbeat(ctx.agent.agent_type);
    const schemas = ctx.tools
      .filter((t) => allowed.includes(t.name))
      .map((t) =>
        this.models.toolSchemaFor(
          t,
          heartbeat && this.exec.executor.offersHeartbeat(ctx.setup, t.name),
        ),
      );
    return (ctx.offer = {
      allowed: [...allowed],
      schemas,
      tokens: this.models.countTokens(JSON.stringify(schemas)),
    });
  }

  private async runPass(
    ctx: RunContext,
    pass: PassState,
  ): Promise<{ kind: 'stop'; reason: StopReason } | { kind: 'heartbeat'; toolName: string }> {
    let reminders = 0;
    for (;;) {
      this.checkBudgets(ctx);
      await this.checkStoredBytes(ctx);
      const allowed = await this.exec.executor.allowedTools(ctx.setup, pass);
      const { schemas, tokens: schemaTokens } = this.offer(ctx, allowed.tools);
      const toolChoice: 'auto' | 'none' | { name: string } =
        allowed.force && allowed.tools.includes(allowed.force)
          ? { name: allowed.force }
          : schemas.length > 0
            ? 'auto'
            : 'none';

      const llm = ctx.agent.llm_config;
      const window = llm.context_window ?? 8192;
      const reserveFor = (w: number) =>
        (llm.max_tokens ?? Math.min(1024, Math.floor(w / 4))) + schemaTokens;
      const countTokens = (t: string) => this.models.countTokens(t);
      const context = await this.repo.contextWindow(
        ctx.run.agent_id,
        ctx.run.conversation_id,
        ctx.messageContext,
        window,
        countTokens,
      );
      /** The context for a window: the system prompt with memory, the current message, what else fits. */
      const build = (w: number) => {
        const b = context.build({
          system: ctx.agent.system,
          blocks: ctx.agent.blocks,
          currentMessageId: ctx.currentMessageId,
          contextWindow: w,
          reserveTokens: reserveFor(w),
        });
        return {
          tokens: b.tokens,
          messages: ctx.vision || !b.images ? b.messages : withoutImages(b.messages),
        };
      };
      let built = build(window);

      const stepNumber = ctx.batchSteps + 1;
      const stepId = this.ids.prefixed('step');
      // token streaming: the text's deltas go out under the id its stored message will have
      const textId = this.ids.prefixed('message');
      const streamTokens = ctx.run.input.stream_tokens === true;
      // chunks take seq_ids as they go out (a resume continues after one)
      if (streamTokens) await this.repo.loadSeq(ctx.run.agent_id);
      this.publish(ctx, 'step.started', { step: stepNumber, step_id: stepId });
      const modelCallStarted = performance.now();
      const modelCallStartedAt = this.clock.now();
      const firstToken = () => (ctx.firstTokenAt ??= this.clock.now());
      let response: ModelResponse;
      for (let retries = 0, fit = window; ; retries++) {
        try {
          response = await ctx.provider.complete({
            llmConfig: llm,
            messages: built.messages,
            promptTokens: built.tokens,
            tools: schemas,
            toolChoice,
            stream: streamTokens,
            onTextDelta: streamTokens
              ? (d) => this.publishDelta(ctx, textId, stepId, d)
              : undefined,
            onFirstChunk: firstToken,
            script: ctx.agent.model_script ?? undefined,
            batchStep: ctx.batchSteps,
            signal: ctx.controller.signal,
            timeoutMs: ctx.budgets.modelCallTimeoutMs,
          });
          break;
        } catch (e) {
          throwIfAborted(ctx);
          if (!(e instanceof ModelError) || e.kind !== 'context_window_exceeded') throw e;
          // The endpoint counts more tokens than we did (another tokenizer, CJK text, a window set
          // larger than the model's): the same call again with half the room the context took, as the
          // builder trims (system prompt, memory and the current message stay), a bounded number of times.
          fit = Math.floor(Math.min(fit, built.tokens + reserveFor(fit)) / 2);
          const smaller = retries < this.config.models.max_context_retries ? build(fit) : null;
          if (!smaller || smaller.tokens >= built.tokens) {
            const why = smaller
              ? 'nothing more can be cut'
              : `after ${retries} retries with a smaller context`;
            throw new ModelError(
              'llm_api_error',
              `the prompt does not fit the model's context window (${built.tokens} tokens by our count, ${why}): ${e.message}`,
              e.status,
            );
          }
          this.logger.warn(
            `run ${ctx.run.id}: the model's context window overflowed at ${built.tokens} tokens; retrying with ${smaller.tokens}`,
          );
          built = smaller;
        }
      }
      firstToken(); // an answer not streamed: its first token came with it
      // every call is run, stored and answered: a model (or a tenant's model_script) asking for thousands
      // in one answer fails the run before any of them runs
      const maxCalls = this.config.limits.max_tool_calls_per_step;
      if (response.toolCalls.length > maxCalls)
        throw new ModelError(
          'invalid_llm_response',
          `the model asked for ${response.toolCalls.length} tool calls in one step; at most ${maxCalls} (limits.max_tool_calls_per_step)`,
        );
      // each call of the turn gets an id of its own in it (some servers repeat one, or send none)
      const toolCalls = uniqueCallIds(response.toolCalls, () => this.ids.prefixed('call'));
      if (toolCalls !== response.toolCalls) response = { ...response, toolCalls };
      const modelCallMs = performance.now() - modelCallStarted;
      const handle = modelHandle(llm);
      this.publish(ctx, 'step.completed', {
        step: stepNumber,
        step_id: stepId,
        model: handle,
        usage: response.usage,
        finish_reason: response.finishReason,
        model_call_ms: modelCallMs,
      });
      ctx.batchSteps++;
      ctx.usage.step_count++;
      addModelUsage(ctx.usage, response.usage);

      const calls = response.toolCalls.map((c): ToolCallRequest => ({
        toolCallId: c.id,
        name: c.name,
        arguments: parseArgs(c.argumentsText),
        stepId,
        consentRequestId: null, // just made: a request of its tool_call_id is an older call's
      }));
      const step: StepEntity = {
        id: stepId,
        tenant_id: ctx.run.tenant_id,
        agent_id: ctx.run.agent_id,
        run_id: ctx.run.id,
        batch_id: ctx.run.batch_id,
        step_number: stepNumber,
        model: llm.model ?? null,
        model_handle: handle,
        model_endpoint: typeof llm.model_endpoint === 'string' ? llm.model_endpoint : null,
        context_window_limit: typeof llm.context_window === 'number' ? llm.context_window : null,
        usage: response.usage,
        finish_reason: response.finishReason,
        feedback: null,
        tags: null,
        model_call_started_at: modelCallStartedAt,
        model_call_ns: Math.round(modelCallMs * 1e6),
        created_at: this.clock.now(),
      };
      const turn = this.assistantTurn(ctx, stepId, textId, response);
      await this.write(ctx, turn.rows, step);

      let outcomes: ToolOutcome[] = [];
      let returns: StoredReturns | undefined;
      if (calls.length > 0) {
        this.publish(ctx, 'tools.executing', { step: stepNumber, tools: calls.map((c) => c.name) });
        const argsText = new Map(response.toolCalls.map((c) => [c.id, c.argumentsText]));
        returns = this.storingReturns(
          ctx,
          () => stepId,
          { ids: turn.held, argsText },
          calls.length,
        );
        outcomes = await this.exec.executor.executeBatch(
          ctx.setup,
          pass,
          calls,
          ctx.meta,
          returns.settled,
        );
      }

      const decision: LoopDecision = decideAfterTurn({
        outcomes,
        pendingExitRequirements: await this.exec.executor.pendingExitRequirements(ctx.setup, pass),
        exitRequested: this.exec.executor.shouldExitLoop(pass),
        rules: ctx.agent.tool_rules,
        continueAfterTools: continuesAfterTools(ctx.agent.agent_type),
        remindersGiven: reminders,
        maxReminders: this.config.processing.max_reminders,
      });
      // the heartbeat goes in one write with the turn's last return (none once the run is stopped)
      const heartbeat = ctx.controller.signal.aborted
        ? []
        : this.heartbeatRows(ctx, decision, outcomes, stepId);
      if (calls.length > 0) {
        const parked = await this.persistOutcomes(
          ctx,
          outcomes,
          () => stepId,
          pass,
          undefined,
          returns,
          heartbeat,
        );
        if (parked.length) ctx.parked = parked;
        // (after the write: a failed read would otherwise end the run with the last call unanswered)
        if (outcomes.some((o) => o.kind === 'executed' && MEMORY_EDIT_TOOLS.has(o.toolName))) {
          ctx.agent = await this.agentOf(ctx.run);
        }
      } else await this.write(ctx, heartbeat);
      throwIfAborted(ctx);
      switch (decision.kind) {
        case 'park':
          return { kind: 'stop', reason: 'requires_approval' };
        case 'continue':
          continue;
        case 'remind':
          reminders++;
          continue;
        case 'heartbeat':
          return { kind: 'heartbeat', toolName: decision.toolName };
        case 'end':
          return { kind: 'stop', reason: decision.stopReason };
      }
    }
  }

  /**
   * The heartbeat user message Letta writes when the batch goes on after a turn (a rule, a failed call, a
   * heartbeat request, a reminder of required tools), with the turn's step: the next model call reads it.
   * None, or that one.
   */
  private heartbeatRows(
    ctx: RunContext,
    decision: LoopDecision,
    outcomes: OutcomeView[],
    stepId: string | null,
  ): NewMessage[] {
    const reason = heartbeatReason({
      decision,
      outcomes,
      rules: ctx.agent.tool_rules,
      v1Loop: continuesAfterTools(ctx.agent.agent_type),
    });
    if (reason === null) return [];
    const content = heartbeatText(reason, new Date(this.clock.now()), ctx.agent.timezone);
    return [this.msg(ctx, 'user_message', { content }, stepId)];
  }

  private checkBudgets(ctx: RunContext): void {
    throwIfAborted(ctx);
    if (ctx.stopAtBoundary) throw new RunStop('error', 'interrupted');
    const over = exhaustedBudget(ctx.budgets, {
      steps: ctx.batchSteps,
      tokens: ctx.earlierTokens + ctx.usage.total_tokens,
      elapsedMs: this.clock.now() - ctx.startedAt,
    });
    if (over) throw new RunStop(over.reason, over.detail);
  }

  /**
   * Before each model call: past `quotas.stored_bytes` the run stores no more turns and ends (error,
   * error type quota_exceeded). What it stored is whole: the turn before this one has every return.
   */
  private async checkStoredBytes(ctx: RunContext): Promise<void> {
    const over = await this.quotas.bytesOver(ctx.run.tenant_id);
    if (!over) return;
    const setting = this.quotas.settingOf(ctx.run.tenant_id, 'stored_bytes');
    throw new RunStop(
      'error',
      `the tenant stores ${over.used} bytes, past its ${over.limit} (${setting}): the run ends before its next model call. Delete agents (their messages go with them), passages or blocks to make room`,
      'quota_exceeded',
    );
  }

  /**
   * The model's turn as Letta messages: reasoning, text, one tool_call_message per call. A call that may
   * park (a client tool, or one that needs consent) is stored `_held`, never shown: if it parks, its
   * approval_request_message is all Letta's clients see of it (as Letta decides from the tool rules before
   * running anything); if it runs, its tool_call_message is shown with its return. Stored now all the
   * same, so that recovery finds a call whose process died while it ran.
   */
  private assistantTurn(
    ctx: RunContext,
    stepId: string,
    textId: string,
    r: ModelResponse,
  ): { rows: NewMessage[]; held: Set<string> } {
    const out: NewMessage[] = [];
    const held = new Set<string>();
    if (r.reasoning)
      out.push(this.msg(ctx, 'reasoning_message', { reasoning: r.reasoning }, stepId));
    // the seq_id of its first chunk: a resume after that never replays the message whole (RunStream)
    const chunkedFrom = this.chunks.firstSeq(ctx.run.id, textId);
    if (r.content)
      out.push({
        ...this.msg(
          ctx,
          'assistant_message',
          {
            content: r.content,
            ...(chunkedFrom !== undefined ? { _chunked_from: chunkedFrom } : {}),
          },
          stepId,
        ),
        id: textId,
      });
    const idx = ruleIndexFor(ctx.setup);
    // a turn with a call that may park holds all of its calls, so they are shown in the model's order
    const holdAll = r.toolCalls.some(
      (c) => idx.consent.has(c.name) || idx.tools.get(c.name)?.kind === 'client',
    );
    for (const c of r.toolCalls) {
      const call = { name: c.name, arguments: c.argumentsText, tool_call_id: c.id };
      if (holdAll) {
        held.add(c.id);
        out.push(this.msg(ctx, 'tool_call_message', { tool_call: call, _held: true }, stepId));
      } else out.push(...this.callMessages(ctx, call, stepId));
    }
    return { rows: out, held };
  }

  /** A call as Letta shows it: its tool_call_message, and send_message's text as an assistant_message. */
  private callMessages(
    ctx: RunContext,
    call: { name: string; arguments: string; tool_call_id: string },
    stepId: string | null,
  ): NewMessage[] {
    const out = [this.msg(ctx, 'tool_call_message', { tool_call: call }, stepId)];
    // Letta clients read the agent's words from assistant_message
    const text = sendMessageText(call.name, call.arguments);
    if (text !== undefined)
      out.push(this.msg(ctx, 'assistant_message', { content: text, _derived: true }, stepId));
    return out;
  }

  /**
   * The executor's `settled` handler: each call's return is stored as soon as the call has finished,
   * before the next call of the turn starts, so that a process dying during a later call keeps this
   * one's result (recovery marks only the unfinished calls unknown). A held turn's return is stored
   * hidden, as its call is: the turn is shown, its calls then their returns, once its end is known.
   * `expected`: the turn's calls; the return of the last of them to finish (no call of the turn runs after
   * it) is left to `persistOutcomes`, to be stored in one write with what follows the turn (its heartbeat).
   */
  private storingReturns(
    ctx: RunContext,
    stepOf: (toolCallId: string) => string | null,
    held?: HeldCalls,
    expected = Infinity,
  ): StoredReturns {
    const stored = new Set<ToolOutcome>();
    let unsettled = expected;
    const settled = async (o: ToolOutcome) => {
      const last = --unsettled === 0;
      if (parksOn(o)) return;
      const hidden = held?.ids.has(o.toolCallId) === true;
      if (last && !hidden) return;
      await this.write(ctx, [this.returnRow(ctx, o, stepOf(o.toolCallId), hidden)]);
      if (!hidden) stored.add(o);
    };
    return { settled, stored, held };
  }

  private returnRow(
    ctx: RunContext,
    o: ToolOutcome,
    stepId: string | null,
    hidden = false,
  ): NewMessage {
    return this.msg(
      ctx,
      'tool_return_message',
      {
        tool_return: o.returnValue,
        status: o.status,
        tool_call_id: o.toolCallId,
        name: o.toolName,
        ...(o.error ? { error_type: o.error.type } : {}),
        ...(hidden ? { _held: true } : {}),
      },
      stepId,
    );
  }

  /**
   * Persists a tool return per outcome (but those stored as they finished), or an approval request for
   * the parked ones; returns the parked calls.
   */
  private async persistOutcomes(
    ctx: RunContext,
    outcomes: ToolOutcome[],
    stepOf: (toolCallId: string) => string | null,
    pass: PassState,
    /**
     * The whole turn, kept with the calls that park (ParkedCall.turn): these outcomes when not given
     * (a model turn); null: none (a batch parked before turns were kept).
     */
    turn?: TurnCall[] | null,
    returns?: StoredReturns,
    /** Rows that follow the turn (its heartbeat), stored in the same write. */
    after: NewMessage[] = [],
  ): Promise<ParkedCall[]> {
    this.publish(ctx, 'tools.completed', { outcomes: outcomes.map(outcomeFacts) });
    const { batch: _cache, ...passSnapshot } = pass;
    const shown: NewMessage[] = [];
    const rows: NewMessage[] = [];
    const parked: ParkedCall[] = [];
    for (const o of outcomes) {
      const stepId = stepOf(o.toolCallId);
      if (parksOn(o)) {
        parked.push({
          tool_call_id: o.toolCallId,
          name: o.toolName,
          arguments: o.arguments,
          request_id: o.consentRequestId ?? null,
          step_id: stepId,
          pass: passSnapshot,
          ...(o.kind === 'client_required'
            ? {
                client: {
                  heartbeat: o.requestHeartbeat,
                  started_at: o.startedAt ?? this.clock.now(),
                },
              }
            : {}),
          ...(o.kind === 'deferred' ? { deferred: true as const } : {}),
        });
        // a held call is shown as made (Letta shows such calls before its approval request); its
        // return comes once it is judged
        if (o.kind !== 'deferred') continue;
      }
      const held = returns?.held;
      if (held?.ids.has(o.toolCallId)) {
        const args = held.argsText.get(o.toolCallId) ?? JSON.stringify(o.arguments);
        // the turn's calls that ran, shown in its order before any return (Letta's order)
        shown.push(
          ...this.callMessages(
            ctx,
            { name: o.toolName, arguments: args, tool_call_id: o.toolCallId },
            stepId,
          ),
        );
      }
      if (!parksOn(o) && !returns?.stored.has(o)) rows.push(this.returnRow(ctx, o, stepId));
    }
    if (parked.length && turn !== null) {
      const whole = turn ?? outcomes.map((o, i) => turnCall(o, i === outcomes.length - 1));
      for (const p of parked) p.turn = whole;
    }
    // (a held call always comes after one that waits)
    if (parked.length) rows.push(this.approvalRequest(ctx, parked));
    await this.write(ctx, [...shown, ...rows, ...after]);
    return parked;
  }

  /**
   * One approval_request_message for every call the turn parked, as Letta writes it (`tool_call` is the
   * first): Letta Code answers the calls the last request lists, so all of them must be there. It keeps
   * what the run parks on (`_parks`): recovery parks the run so when its end could not be stored.
   */
  private approvalRequest(ctx: RunContext, all: ParkedCall[]): NewMessage {
    const parked = awaitingAnswer(all);
    const toolCalls = parked.map((p) => ({
      name: p.name,
      arguments: JSON.stringify(p.arguments),
      tool_call_id: p.tool_call_id,
    }));
    return this.msg(
      ctx,
      'approval_request_message',
      {
        tool_call: toolCalls[0],
        tool_calls: toolCalls,
        request_id: parked[0].request_id,
        _parks: storedParks(all),
      },
      parked[0].step_id,
    );
  }

  private stopFor(ctx: RunContext, e: unknown): { stop: StopReason; detail: string | null } {
    if (e instanceof RunStop) return { stop: e.reason, detail: e.detail };
    if (ctx.controller.signal.aborted) {
      const s = stopForAbort(ctx);
      return { stop: s.reason, detail: s.detail };
    }
    if (e instanceof ModelError) {
      const stop = e.kind === 'context_window_exceeded' ? 'llm_api_error' : e.kind;
      return { stop, detail: e.message };
    }
    const message = e instanceof Error ? e.message : String(e);
    const code = (e as { code?: string })?.code;
    if (code === 'NOT_FOUND') return { stop: 'error', detail: message };
    this.logger.error(`run ${ctx.run.id} failed: ${e instanceof Error ? e.stack : message}`);
    return { stop: 'error', detail: message };
  }

  private async finish(
    ctx: RunContext,
    stop: StopReason,
    detail: string | null,
    errorType: string | null = null,
  ): Promise<RunResult> {
    const { run } = ctx;
    const status = runStatusFor(stop);
    const parked = stop === 'requires_approval' ? ctx.parked : null;
    const completedAt = this.clock.now();
    const end: RunEnd = {
      status,
      stop_reason: stop,
      usage: ctx.usage,
      error: detail,
      error_type: errorType,
      parked,
      ttft_ns: ctx.firstTokenAt === null ? null : (ctx.firstTokenAt - ctx.startedAt) * 1e6,
    };
    try {
      // stored before anything announces it: what the API answers is what happened (when it cannot be
      // stored, recovery decides the end from what is, as any instance would)
      await this.retried(ctx, () => this.storeEnd(ctx, end, completedAt));
    } finally {
      this.leave(ctx);
    }
    if (parked?.length)
      this.repo.rememberParked({
        run: { ...run, ...end, completed_at: completedAt },
        spent: { steps: ctx.batchSteps, tokens: ctx.earlierTokens + ctx.usage.total_tokens },
        messageContext: ctx.messageContext,
        // (a call without a request never matches a decision: the batch then resumes from the database)
        undecided: new Set(
          awaitingAnswer(parked)
            .filter((c) => !c.client)
            .map((c) => c.request_id ?? c.tool_call_id),
        ),
      });
    const { parked: _parked, ttft_ns: _ttft, ...announced } = end;
    this.publish(ctx, 'run.completed', announced);
    if (run.input.callback_url) this.callbacks.kick(); // stored with the end
    return { run: { ...run, ...end, completed_at: completedAt }, messages: ctx.produced };
  }

  /**
   * The run's end, a parked batch's state and the agent's last stop reason (independent: one group
   * commit). A batch that ended drops its state only once the end is stored: until then recovery reads the
   * exit requirements from it (RunRecovery decides an end that was not stored from what is).
   */
  private async storeEnd(ctx: RunContext, end: RunEnd, at: number): Promise<void> {
    const { run } = ctx;
    const parks = end.stop_reason === 'requires_approval';
    await Promise.all([
      parks ? this.exec.executor.parkBatch(run.batch_id) : null,
      this.repo.finishRun(run, end, at, ctx.tenure),
      ctx.agent
        ? this.agents
            .setLastStopReason(run.tenant_id, run.agent_id, end.stop_reason, run.started_at)
            // the agent was deleted while this run stopped: what it stored since goes as its history did
            .then((kept) => (kept ? null : this.repo.deleteHistory(run.tenant_id, run.agent_id)))
        : null,
    ]);
    // Not awaited: nothing reads an ended batch's state, so the answer does not wait for a second commit
    // (the deletion joins the next group); state left behind is pruned after its TTL.
    if (!parks)
      void this.exec.executor
        .completeBatch(run.batch_id)
        .catch((e: unknown) =>
          this.logger.warn(`run ${run.id}: its batch state stays until pruned: ${String(e)}`),
        );
  }

  /**
   * The run is given up to recovery (its writes fail, or its tenure is over): nothing more of it runs here.
   * A tool still running beside the call whose write failed (read-only calls run together) is told to stop
   * now, before recovery gives it its return (outcome unknown); its own return is never stored, and no
   * call starts after it.
   */
  private leaveToRecovery(ctx: RunContext): void {
    if (!ctx.controller.signal.aborted) ctx.controller.abort('interrupted');
    this.leave(ctx);
  }

  /** The run is no longer processed here. */
  private leave(ctx: RunContext): void {
    this.active.delete(ctx.run.id);
    this.chunks.end(ctx.run.id);
    ctx.markStopped();
  }

  private msg(
    ctx: RunContext,
    type: MessageType,
    payload: Record<string, unknown>,
    stepId: string | null = null,
  ): NewMessage {
    return newMessageRow(
      this.ids.prefixed('message'),
      ctx.run,
      type,
      payload,
      stepId,
      this.clock.now(),
    );
  }

  /** Stores the run's messages (and step) under the run's tenure (see `retried`). */
  private async write(
    ctx: RunContext,
    rows: NewMessage[],
    step?: StepEntity,
  ): Promise<MessageEntity[]> {
    const stored = await this.retried(ctx, () =>
      this.repo.append(ctx.run.agent_id, rows, step, ctx.tenure),
    );
    for (const m of stored) {
      if (m.payload._held) continue; // shown later, as its approval request or its call
      const mapped = mapMessage(m);
      if (!m.payload._input) ctx.produced.push(mapped);
      this.publish(ctx, m.payload._input ? 'input_message' : 'message', mapped.letta, mapped.form);
    }
    return stored;
  }

  /**
   * A write of the run, tried again on a failure (a dropped connection): one that keeps failing, or
   * LEASE_LOST, leaves the run to recovery (RunNotStored).
   */
  private async retried<T>(ctx: RunContext, write: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (e) {
        if (leftToRecovery(e)) throw e;
        if (attempt >= WRITE_ATTEMPTS) throw new RunNotStored(ctx.run.id, e);
        this.logger.warn(`run ${ctx.run.id}: a write failed, trying again: ${String(e)}`);
        await new Promise((r) => setTimeout(r, WRITE_RETRY_MS[attempt - 1]));
      }
    }
  }

  /** A chunk of the model's text, as Letta streams tokens: an assistant_message with the final message's id. */
  private publishDelta(ctx: RunContext, id: string, stepId: string, content: string): void {
    const seq = this.repo.takeSeq(ctx.run.agent_id);
    const m = { ...this.msg(ctx, 'assistant_message', { content }, stepId), id, seq_id: seq };
    const chunk = toLettaMessage(m);
    if (seq !== null) this.chunks.add(ctx.run.id, { ...chunk, seq_id: seq, content });
    this.publish(ctx, 'message.delta', chunk);
  }

  private publish(
    ctx: RunContext,
    type: string,
    data: Record<string, unknown>,
    form: RunEvent['sendMessageForm'] = null,
  ): void {
    this.bus.publish({
      tenantId: ctx.run.tenant_id,
      agentId: ctx.run.agent_id,
      runId: ctx.run.id,
      type,
      data,
      ...(form ? { sendMessageForm: form } : {}),
    });
  }
}

/** A client tool of the request as the executor sees it: its rules apply, the client runs it. */
export function clientToolDefinition(t: ClientToolSpec): ToolDefinition {
  return { ...t, safety: 'side_effecting', kind: 'client' };
}

/** A call of a turn as the loop decides on it; `withReturn` keeps its return (the turn's last call). */
function turnCall(o: ToolOutcome, withReturn: boolean): TurnCall {
  return {
    tool_call_id: o.toolCallId,
    toolName: o.toolName,
    kind: o.kind,
    status: o.status,
    requestHeartbeat: o.requestHeartbeat,
    continueLoop: o.continueLoop,
    exitLoop: o.exitLoop,
    ...(o.error ? { error: { type: o.error.type } } : {}),
    ...(withReturn ? { returnValue: o.returnValue } : {}),
  };
}

/** The parked turn with the parked calls' outcomes in their places. */
function mergeTurn(turn: TurnCall[], resolved: ToolOutcome[]): TurnCall[] {
  const byId = new Map(resolved.map((o) => [o.toolCallId, o]));
  return turn.map((c, i) => {
    const o = byId.get(c.tool_call_id);
    return o ? turnCall(o, i === turn.length - 1) : c;
  });
}

/** What observability needs of an outcome (the return text and arguments stay out of metrics and logs). */
function outcomeFacts(o: ToolOutcome): ToolOutcomeFacts {
  return {
    tool_call_id: o.toolCallId,
    tool: o.toolName,
    kind: o.kind,
    status: o.status,
    error_type: o.error?.type ?? null,
    rule: o.error?.rule?.type ?? null,
    duration_ms:
      o.startedAt !== undefined && o.finishedAt !== undefined ? o.finishedAt - o.startedAt : null,
  };
}

/** A parked call refused without asking the executor (the run was cancelled, or the client did not run it). */
function deniedOutcome(c: ParkedCall, reason: string): ToolOutcome {
  return notRun(
    c,
    'PermissionDenied',
    `[PermissionDenied] ${c.name} was not run: ${reason}`,
    reason,
  );
}

/** A held call of a cancelled batch: never judged nor asked about, so cancelled rather than denied. */
function cancelledOutcome(c: ParkedCall): ToolOutcome {
  const text = renderRefusal(
    'Cancelled',
    `${c.name} was not run: the run was cancelled before it was judged (it was held behind a call that waited)`,
  );
  return notRun(c, 'Cancelled', text, text);
}

function notRun(c: ParkedCall, type: ToolErrorType, text: string, message: string): ToolOutcome {
  return {
    toolCallId: c.tool_call_id,
    toolName: c.name,
    arguments: c.arguments,
    kind: 'refused',
    status: 'error',
    returnValue: text,
    error: { type, message },
    requestHeartbeat: false,
    continueLoop: false,
    exitLoop: false,
  };
}

function stopForAbort(ctx: RunContext): RunStop {
  const why = ctx.controller.signal.reason as AbortWhy;
  return why === 'interrupted' ? new RunStop('error', 'interrupted') : new RunStop(why);
}

/** The run stops here without an end, which recovery writes: its tenure is over, or its writes fail. */
function leftToRecovery(e: unknown): boolean {
  return e instanceof RunNotStored || (e as { code?: string })?.code === 'LEASE_LOST';
}

function throwIfAborted(ctx: RunContext): void {
  if (ctx.controller.signal.aborted) throw stopForAbort(ctx);
}
