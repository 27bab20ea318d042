import { randomUUID } from 'node:crypto';
import type { Clock, IdGenerator } from '../ports';
import { checkBatchRules, checkCooldowns, checkPassRules } from '../rules/rule-checks';
import {
  canonicalKey,
  checkDedupe,
  checkDedupeInTurn,
  dedupePolicy,
  DedupePolicy,
  isLive,
} from '../rules/dedupe.rule';
import { renderRefusal } from '../rules/render-refusal';
import { RuleIndex, ruleIndexFor } from '../rules/rule-index';
import {
  type AwaitingCall,
  type Denial,
  lastCall,
  type RuleView,
  waitingFor,
} from '../rules/verdict';
import { requestsHeartbeat } from '../tools/heartbeat';
import { DEFAULT_RETURN_CHAR_LIMIT, type ToolDefinition } from '../tools/tool-definition';
import { ArgumentValidator } from './argument-validator';
import {
  AgentToolSetup,
  AllowedTools,
  BatchState,
  ClientResult,
  ConsentCheck,
  ConsentPort,
  DedupeEntry,
  ExecutionMeta,
  ExecutorLimits,
  ExecutorStateStore,
  OutcomeKind,
  PassState,
  TOOL_TIMEOUT_REASON,
  ToolCallRequest,
  ToolErrorType,
  ToolInvoker,
  ToolOutcome,
} from './contracts';

/** setTimeout/clearTimeout, injectable so tests drive tool timeouts without real waiting. */
export interface TimerPort {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface ToolExecutorDeps {
  clock: Clock;
  store: ExecutorStateStore;
  invoker: ToolInvoker;
  consent: ConsentPort;
  limits: ExecutorLimits;
  /** Ids for calls the executor starts itself (start constraints, exit requirements). */
  ids?: Pick<IdGenerator, 'prefixed'>;
  timers?: TimerPort;
}

/** A call that passed every check and holds its claim, ready to run. */
interface Admitted {
  call: ToolCallRequest;
  tool: ToolDefinition;
  args: Record<string, unknown>;
  heartbeat: boolean;
  policy: DedupePolicy | null;
  key: string | undefined;
  startedAt: number;
  grantId?: string;
}

type Admission =
  { outcome: ToolOutcome; admitted?: undefined } | { admitted: Admitted; outcome?: undefined };

type RunResult =
  | { kind: 'done'; status: 'success' | 'error'; value: string }
  | { kind: 'client' }
  | { kind: 'timeout' }
  | { kind: 'cancelled' };

const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Tool timeouts share one armed Node timer (the earliest deadline): a setTimeout per call costs more
 * than the rest of the executor's work. Unref'd: a pending tool deadline never keeps the process alive.
 */
export class CoalescedTimers implements TimerPort {
  private readonly entries = new Map<number, { at: number; fn: () => void }>();
  private seq = 0;
  private armed: NodeJS.Timeout | undefined;
  private armedAt = Infinity;

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    const at = Date.now() + ms;
    this.entries.set(id, { at, fn });
    if (at < this.armedAt) this.arm(at);
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.entries.delete(handle as number);
  }

  private arm(at: number): void {
    if (this.armed) clearTimeout(this.armed);
    this.armedAt = at;
    // Node fires a longer delay at once (it overflows 32 bits): wait the most it can, then re-arm
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now()));
    this.armed = setTimeout(() => this.fire(), delay);
    this.armed.unref();
  }

  private fire(): void {
    this.armed = undefined;
    this.armedAt = Infinity;
    const now = Date.now();
    let next = Infinity;
    for (const [id, e] of this.entries) {
      if (e.at <= now) {
        this.entries.delete(id);
        e.fn();
      } else if (e.at < next) next = e.at;
    }
    if (next < Infinity) this.arm(next);
  }
}

const isPromise = <T>(v: T | Promise<T>): v is Promise<T> => v instanceof Promise;

/**
 * Decides, for every tool call an agent's model makes, whether it may run; runs it with a timeout;
 * records what the scopes need (pass, batch, persistent). Pure: every effect goes through a port.
 * Order of checks (issue 3): dedupe → pass rules → batch rules → cooldown → consent → arguments → execute → record.
 */
export class ToolExecutor {
  private readonly validator = new ArgumentValidator();
  private readonly timers: TimerPort;

  constructor(private readonly deps: ToolExecutorDeps) {
    this.timers = deps.timers ?? new CoalescedTimers();
  }

  /**
   * Fresh per-pass state: call at the user message and at each heartbeat continuation. `batch`: the
   * batch's state when the caller has it, so it is not read from the store: `'new'` for a batch it
   * has just created (nothing stored yet), or the previous pass's `batch` of the same batch.
   */
  newPass(setup: AgentToolSetup, batchId: string, batch?: BatchState | 'new'): PassState {
    return {
      batchId,
      history: [],
      startConstraintsDone: ruleIndexFor(setup).startTools.size === 0,
      exitRequirementsPending: [],
      phase: 'start',
      ...(batch ? { batch: batch === 'new' ? emptyBatch(this.deps.clock.now()) : batch } : {}),
    };
  }

  /**
   * The tools the next model call may be offered (every pass, batch and cooldown rule applied to each
   * tool), and the one to force when rules narrow the choice to exactly one.
   */
  async allowedTools(setup: AgentToolSetup, pass: PassState): Promise<AllowedTools> {
    return this.allowedAfter(setup, pass, []);
  }

  /** allowedTools once `awaiting` (calls of this turn that wait for consent or the client) have run. */
  private async allowedAfter(
    setup: AgentToolSetup,
    pass: PassState,
    awaiting: readonly AwaitingCall[],
  ): Promise<AllowedTools> {
    const idx = ruleIndexFor(setup);
    const view = this.view(pass, pass.batch ?? (await this.loadBatch(pass)));
    view.awaiting = awaiting;
    const tools: string[] = [];
    for (const name of idx.toolNames) {
      if (!checkPassRules(idx, name, view).allowed) continue;
      if (!checkBatchRules(idx, name, view).allowed) continue;
      if (idx.cooldowns.has(name)) {
        let last = this.deps.store.getLastExecution(setup.agentId, name);
        if (isPromise(last)) last = await last;
        view.lastExecutionAt = last;
        const ok = checkCooldowns(idx, name, view).allowed;
        view.lastExecutionAt = null;
        if (!ok) continue;
      }
      tools.push(name);
    }
    // An agent that simply has one tool is not forced; a rule that narrows the choice to one is.
    return tools.length === 1 && idx.toolNames.length > 1 ? { tools, force: tools[0] } : { tools };
  }

  /**
   * `awaiting`: this turn's earlier calls that wait for a person's consent or for the client's result. The
   * rules see them as run, in order (max-count, exclusive groups, cooldowns, dedupe, and the pass rules: the
   * last of them is the last call), so nobody is asked to approve a call the rules would refuse once the
   * earlier ones are approved and run; with ordering rules, no call runs ahead of them, and one whose verdict
   * they decide is held (outcome `deferred`) to be judged once they are.
   */
  async execute(
    setup: AgentToolSetup,
    pass: PassState,
    call: ToolCallRequest,
    meta: ExecutionMeta,
    awaiting: readonly AwaitingCall[] = [],
  ): Promise<ToolOutcome> {
    try {
      const idx = ruleIndexFor(setup);
      const a = await this.admit(setup, idx, pass, call, meta, awaiting);
      if (a.outcome) return a.outcome;
      const result = await this.run(setup, a.admitted, meta);
      return await this.record(setup, idx, pass, a.admitted, result, meta.tenure);
    } catch (e) {
      return internalFailure(call, e);
    }
  }

  /**
   * Contiguous read_only calls run concurrently (checked and claimed one by one, in order, then run
   * together, then recorded in order), a deduplicated tool once per group; any other call runs alone.
   * A call with the client's result is recorded in its place. One outcome per call, in order. Each is
   * handed to `settled` as soon as it is known, in order, and before the next call starts: the caller
   * stores it there, so a process that dies during a later call keeps the finished calls' results. An
   * error `settled` throws ends the batch: no later call starts.
   */
  async executeBatch(
    setup: AgentToolSetup,
    pass: PassState,
    calls: ToolCallRequest[],
    meta: ExecutionMeta,
    settled?: (outcome: ToolOutcome) => Promise<void>,
  ): Promise<ToolOutcome[]> {
    const idx = ruleIndexFor(setup);
    const out: ToolOutcome[] = [];
    const awaiting: AwaitingCall[] = [];
    // the turn's first held call: whether the later ones may run depends on whether it runs
    let heldCall: ToolOutcome | undefined;
    // a call alone: one that waits (for consent, for the client) is seen by the later ones as run
    const push = async (call: ToolCallRequest, o: ToolOutcome) => {
      if (o.kind === 'consent_required' || o.kind === 'client_required')
        awaiting.push(awaitingCall(call, o.arguments, o.kind === 'client_required'));
      else if (o.kind === 'deferred') heldCall ??= o;
      await settle(o);
    };
    const settle = async (o: ToolOutcome) => {
      out.push(o);
      await settled?.(o);
    };
    let i = 0;
    while (i < calls.length) {
      if (heldCall) {
        const c = calls[i++];
        await settle(
          held(
            c,
            plainArgs(c),
            `it comes after ${heldCall.toolName} (call ${heldCall.toolCallId}), held too`,
          ),
        );
        continue;
      }
      const answered = calls[i].clientResult;
      if (answered) {
        const o = await this.completeClientCall(setup, idx, pass, calls[i], answered, meta);
        await push(calls[i], o);
        i++;
        continue;
      }
      let j = i;
      // a tool with a dedupe policy once per group: a repeated call must find the first one's record
      const deduped = new Set<string>();
      while (j < calls.length && !calls[j].clientResult && concurrencySafe(idx, calls[j])) {
        const name = calls[j].name;
        if (
          dedupePolicy(idx.tools.get(name)!, idx.dedupe.get(name), idx.dedupeStar, setup.settings)
        ) {
          if (deduped.has(name)) break;
          deduped.add(name);
        }
        j++;
      }
      if (j - i < 2) {
        await push(calls[i], await this.execute(setup, pass, calls[i], meta, awaiting));
        i++;
        continue;
      }
      const group = calls.slice(i, j);
      const admissions: Admission[] = [];
      for (const call of group) {
        try {
          const a = await this.admit(setup, idx, pass, call, meta, awaiting);
          if (a.outcome?.kind === 'consent_required')
            awaiting.push(awaitingCall(call, a.outcome.arguments, false));
          else if (a.admitted?.tool.kind === 'client')
            awaiting.push(awaitingCall(call, a.admitted.args, true));
          admissions.push(a);
        } catch (e) {
          admissions.push({ outcome: internalFailure(call, e) });
        }
      }
      // run together; each recorded (and handed over) once it and the calls before it have finished
      const results = admissions.map((a) =>
        a.admitted ? this.run(setup, a.admitted, meta) : null,
      );
      for (let k = 0; k < group.length; k++) {
        const a = admissions[k];
        let o: ToolOutcome;
        if (a.outcome) o = a.outcome;
        else
          try {
            o = await this.record(setup, idx, pass, a.admitted, await results[k]!, meta.tenure);
          } catch (e) {
            o = internalFailure(group[k], e);
          }
        await settle(o);
      }
      i = j;
    }
    return out;
  }

  /** Runs the run_first tools with their prefilled args, each through the full checks. */
  async executeStartConstraints(
    setup: AgentToolSetup,
    pass: PassState,
    meta: ExecutionMeta,
  ): Promise<ToolOutcome[]> {
    const idx = ruleIndexFor(setup);
    if (pass.startConstraintsDone) return [];
    const out: ToolOutcome[] = [];
    for (const [name, rule] of idx.startTools) {
      const call = { toolCallId: this.newCallId(), name, arguments: { ...(rule.args ?? {}) } };
      out.push(await this.execute(setup, pass, call, meta));
    }
    return out;
  }

  /** What must still run before the batch may end (required_before_exit, triggered requires_following_tools). */
  async pendingExitRequirements(setup: AgentToolSetup, pass: PassState): Promise<string[]> {
    const batch = pass.batch ?? (await this.loadBatch(pass));
    return (pass.exitRequirementsPending = pendingFor(ruleIndexFor(setup), batch));
  }

  /** Runs each pending exit requirement once (arguments `{}`), through the full checks. */
  async executeExitRequirements(
    setup: AgentToolSetup,
    pass: PassState,
    meta: ExecutionMeta,
  ): Promise<ToolOutcome[]> {
    const out: ToolOutcome[] = [];
    for (const name of await this.pendingExitRequirements(setup, pass)) {
      const call = { toolCallId: this.newCallId(), name, arguments: {} };
      out.push(await this.execute(setup, pass, call, meta));
    }
    return out;
  }

  /** An exit_loop tool ran in this pass: the batch ends (after its exit requirements). */
  shouldExitLoop(pass: PassState): boolean {
    return pass.phase === 'exit_requested';
  }

  /** Whether the model is offered `request_heartbeat` on the tool: not on an exit_loop tool (Letta's terminal tools), whose call ends the batch. */
  offersHeartbeat(setup: AgentToolSetup, toolName: string): boolean {
    return !ruleIndexFor(setup).exitLoop.has(toolName);
  }

  /** False when the tool has a continue_loop rule (the loop continues without a heartbeat request). */
  requiresHeartbeat(setup: AgentToolSetup, toolName: string): boolean {
    return !ruleIndexFor(setup).continueLoop.has(toolName);
  }

  /** The batch waits for a person or a client: its state stays, past the TTL, until the batch goes on. */
  async parkBatch(batchId: string): Promise<void> {
    await this.deps.store.parkBatch(batchId);
  }

  /** Drops the batch's state (max calls, exclusive groups, exit requirements). */
  async completeBatch(batchId: string): Promise<void> {
    await this.deps.store.deleteBatch(batchId);
  }

  /**
   * Whether a call (its tool_call_id in the step that holds it) may have started: its claim is written
   * (and committed) before its tool starts, so a call without one never ran. Claims live `batchTtlMs`,
   * far longer than a run can be left unrecovered.
   */
  async wasStarted(
    agentId: string,
    toolCallId: string,
    stepId: string | null | undefined,
  ): Promise<boolean> {
    return this.deps.store.isClaimed(agentId, toolCallId, stepId ?? '');
  }

  /**
   * A call that started and never finished here (its process died): its outcome is unknown, so an
   * identical call is refused for the dedupe window, as after a timeout (recovery calls this).
   */
  async rememberUnknownOutcome(
    setup: AgentToolSetup,
    call: ToolCallRequest,
    text: string,
  ): Promise<void> {
    const idx = ruleIndexFor(setup);
    const tool = idx.tools.get(call.name);
    if (!tool || typeof call.arguments === 'string') return;
    const policy = dedupePolicy(tool, idx.dedupe.get(call.name), idx.dedupeStar, setup.settings);
    if (!policy) return;
    const key = canonicalKey(call.name, admittedArgs(idx, call).args);
    await this.remember(setup, policy, key, text, this.deps.clock.now(), true);
  }

  /** Drops expired dedupe entries, old claims and abandoned batch state. */
  async pruneExpired(): Promise<void> {
    await this.deps.store.pruneExpired(this.deps.clock.now(), this.deps.limits.batchTtlMs);
  }

  // ------------------------------------------------------------------ internals

  private async admit(
    setup: AgentToolSetup,
    idx: RuleIndex,
    pass: PassState,
    call: ToolCallRequest,
    meta: ExecutionMeta,
    awaiting: readonly AwaitingCall[],
  ): Promise<Admission> {
    const { store } = this.deps;
    const name = call.name;
    const badJson = typeof call.arguments === 'string';
    // the child args of a parent that waits for consent are shown to the person, as they will run
    const lastTool = lastCall({ history: pass.history, awaiting })?.toolName;
    const { args, heartbeat } = admittedArgs(idx, call, lastTool);
    /** A refused call: never executed, nothing recorded; the text says what is allowed now (`listAllowed`). */
    const refuse = async (
      code: ToolErrorType,
      detail: string,
      d?: Denial,
      listAllowed = true,
    ): Promise<Admission> => {
      const allowedNow = !listAllowed
        ? undefined
        : code === 'NotFound'
          ? idx.toolNames
          : (await this.allowedAfter(setup, pass, awaiting)).tools;
      return { outcome: refused(call, args, code, detail, d, allowedNow) };
    };
    /** Held until `w` (a call of this turn that waits) is decided: nothing runs, nothing is recorded. */
    const hold = (w: AwaitingCall, why?: string): Admission => ({
      outcome: held(
        call,
        args,
        `it comes after ${w.toolName} (call ${w.toolCallId}, waiting for ${waitingFor(w)})${why ? `: ${why}` : ''}`,
      ),
    });
    const tool = idx.tools.get(name);
    if (!tool) return refuse('NotFound', `no tool named ${name}`);
    const now = this.deps.clock.now();

    // 1. dedupe (persistent), first (issue 3's order): a duplicate executes nothing, whatever the rules say now
    const policy = badJson
      ? null
      : dedupePolicy(tool, idx.dedupe.get(name), idx.dedupeStar, setup.settings);
    let key: string | undefined;
    if (policy) {
      key = canonicalKey(name, args);
      let entry = store.getDedupe(setup.agentId, key);
      if (isPromise(entry)) entry = await entry;
      if (entry && isLive(policy, entry, now)) {
        if (policy.mode === 'return_cached' && !entry.unknown) {
          const ahead = runsAhead(idx, awaiting, false, false);
          if (ahead) return hold(ahead);
          // The model got the result, so ordering rules see it (as the last call, a start tool, an exit),
          // but it satisfies no prerequisite; nothing ran, so nothing is counted.
          pass.history.push({
            toolCallId: call.toolCallId,
            toolName: name,
            status: 'success',
            returnValue: entry.result,
            at: now,
            cached: true,
          });
          if (pass.phase === 'start') pass.phase = 'running';
          if (idx.startTools.has(name)) pass.startConstraintsDone = true;
          const exitLoop = idx.exitLoop.has(name);
          if (exitLoop) pass.phase = 'exit_requested';
          return {
            outcome: {
              ...base(call, args, 'cached', 'success', entry.result),
              requestHeartbeat: heartbeat,
              continueLoop: idx.continueLoop.has(name),
              exitLoop,
            },
          };
        }
        const v = checkDedupe(policy, name, entry, now) as Denial;
        return refuse(v.code, v.detail, v);
      }
      const twin = awaiting.length ? checkDedupeInTurn(policy, name, key, awaiting) : undefined;
      if (twin && !twin.allowed) return refuse(twin.code, twin.detail, twin);
    }

    // 2–4. pass rules, batch rules, cooldown
    const view = this.view(pass, pass.batch ?? (await this.loadBatch(pass)));
    view.now = now;
    view.awaiting = awaiting;
    let v = checkPassRules(idx, name, view);
    if (v.allowed) v = checkBatchRules(idx, name, view);
    // an ordering rule the turn's waiting call decides: judged once it is decided, in the turn's order
    if (!v.allowed && v.waitingOn) return hold(v.waitingOn, v.detail);
    if (v.allowed && idx.cooldowns.has(name)) {
      let last = store.getLastExecution(setup.agentId, name);
      if (isPromise(last)) last = await last;
      view.lastExecutionAt = last;
      v = checkCooldowns(idx, name, view);
    }
    if (!v.allowed) return refuse(v.code, v.detail, v);

    // 5. consent (fails closed: a broken broker is a denial)
    let grantId: string | undefined;
    const consentRule = idx.consent.get(name);
    if (consentRule) {
      // nobody is asked about a call that would run ahead of an earlier one: it waits for that one
      const ahead = runsAhead(idx, awaiting, tool.kind === 'client', true);
      if (ahead) return hold(ahead);
      let c: ConsentCheck;
      try {
        c = await this.deps.consent.check({
          tenantId: meta.tenantId,
          agentId: meta.agentId,
          runId: meta.runId,
          batchId: pass.batchId,
          toolCallId: call.toolCallId,
          ...(call.consentRequestId !== undefined ? { requestId: call.consentRequestId } : {}),
          toolName: name,
          arguments: args,
          scope: consentRule.scope ?? name,
          timeoutMs: setup.settings.consentTimeoutMs,
          ...(meta.grantsOnly ? { grantsOnly: true } : {}),
        });
      } catch (e) {
        c = { kind: 'denied', reason: `consent check failed: ${errorText(e)}` };
      }
      switch (c.kind) {
        case 'granted':
          grantId = c.grantId;
          break;
        case 'approved':
          break;
        case 'denied':
          return refuse('PermissionDenied', `${name} was denied: ${c.reason}`, {
            allowed: false,
            code: 'PermissionDenied',
            rule: consentRule,
            detail: c.reason,
          });
        case 'pending': {
          const text = `[ToolConsentRequired] ${name} waits for a person's approval (request ${c.requestId})`;
          return {
            outcome: {
              ...base(call, args, 'consent_required', 'error', text),
              consentRequestId: c.requestId,
            },
          };
        }
        case 'required': {
          const text = `[ToolConsentRequired] ${name} needs a person's consent and no standing grant covers this call`;
          return { outcome: base(call, args, 'consent_required', 'error', text) };
        }
      }
    }

    // the rules judged it as coming after the turn's waiting calls: it may not run before them
    const ahead = runsAhead(idx, awaiting, tool.kind === 'client', false);
    if (ahead) return hold(ahead);

    // 6. arguments against the tool's JSON Schema
    if (badJson)
      return refuse(
        'InvalidArguments',
        `the arguments for ${name} are not valid JSON`,
        undefined,
        false,
      );
    const problem = this.validator.validate(tool.parameters, args);
    if (problem !== null)
      return refuse(
        'InvalidArguments',
        `invalid arguments for ${name}: ${problem}`,
        undefined,
        false,
      );
    if (meta.signal?.aborted)
      return refuse(
        'Cancelled',
        `${name} was not started: the run was cancelled`,
        undefined,
        false,
      );

    // at most once per call (its tool_call_id in the step that holds it), across restarts
    let claimed = store.claimToolCall(
      setup.agentId,
      call.toolCallId,
      call.stepId ?? '',
      now,
      setup.tenantId,
      meta.tenure,
    );
    if (isPromise(claimed)) claimed = await claimed;
    if (!claimed)
      return refuse(
        'AlreadyExecuted',
        `tool call ${call.toolCallId} was already executed`,
        undefined,
        false,
      );

    // Reserve before running, so calls admitted alongside (concurrent read_only) see the count.
    const batch = view.batch as BatchState;
    batch.callCounts[name] = (batch.callCounts[name] ?? 0) + 1;
    // stored before the tool starts, as the cooldown: a call whose process dies while it runs still
    // counts when its batch goes on elsewhere (recovery carries the batch's approved calls that had not started)
    if (idx.maxCount.has(name) || idx.maxCountStar.length > 0 || idx.groups.has(name)) {
      const saved = store.saveBatch(pass.batchId, batch, setup.tenantId, {
        agentId: setup.agentId,
        tenure: meta.tenure,
      });
      if (isPromise(saved)) await saved;
    }
    if (idx.cooldowns.has(name)) {
      const r = store.setLastExecution(setup.agentId, name, now, setup.tenantId, meta.tenure);
      if (isPromise(r)) await r;
    }
    return { admitted: { call, tool, args, heartbeat, policy, key, startedAt: now, grantId } };
  }

  /**
   * Records what the client answered for a call that was `client_required` (admitted, counted and
   * claimed then), as if the tool had just run here: pass history, exit requirements, dedupe.
   */
  private async completeClientCall(
    setup: AgentToolSetup,
    idx: RuleIndex,
    pass: PassState,
    call: ToolCallRequest,
    result: ClientResult,
    meta: ExecutionMeta,
  ): Promise<ToolOutcome> {
    const tool = idx.tools.get(call.name);
    if (!tool) return internalFailure(call, new Error(`no tool named ${call.name}`));
    const args = plainArgs(call);
    pass.batch ??= await this.loadBatch(pass);
    const policy = dedupePolicy(tool, idx.dedupe.get(call.name), idx.dedupeStar, setup.settings);
    const admitted: Admitted = {
      call,
      tool,
      args,
      heartbeat: result.heartbeat,
      policy,
      key: policy ? canonicalKey(call.name, args) : undefined,
      startedAt: result.startedAt,
    };
    return this.record(
      setup,
      idx,
      pass,
      admitted,
      { kind: 'done', status: result.status, value: result.value },
      meta.tenure,
    );
  }

  private run(setup: AgentToolSetup, a: Admitted, meta: ExecutionMeta): Promise<RunResult> {
    if (a.tool.kind === 'client') return Promise.resolve({ kind: 'client' });
    const outer = meta.signal;
    // The tool's AbortSignal is made only if the tool reads it: creating one costs microseconds.
    let ac: AbortController | undefined;
    let abortReason: unknown;
    const abort = (reason: unknown) => {
      abortReason ??= reason;
      ac?.abort(reason);
    };
    const ctx = {
      tenantId: setup.tenantId,
      agentId: setup.agentId,
      runId: meta.runId,
      toolCallId: a.call.toolCallId,
      get signal(): AbortSignal {
        if (!ac) {
          ac = new AbortController();
          if (abortReason !== undefined) ac.abort(abortReason);
        }
        return ac.signal;
      },
    };
    return new Promise<RunResult>((resolve) => {
      let settled = false;
      const finish = (r: RunResult) => {
        if (settled) return;
        settled = true;
        this.timers.clearTimeout(timer);
        outer?.removeEventListener('abort', onAbort);
        resolve(r);
      };
      const onAbort = () => {
        abort(outer?.reason ?? 'cancelled');
        finish({ kind: 'cancelled' });
      };
      const timer = this.timers.setTimeout(() => {
        abort(TOOL_TIMEOUT_REASON);
        finish({ kind: 'timeout' });
      }, setup.settings.toolTimeoutMs);
      outer?.addEventListener('abort', onAbort, { once: true });
      try {
        this.deps.invoker.invoke(a.tool, a.args, ctx).then(
          (r) => finish({ kind: 'done', status: r.status, value: r.value }),
          (e: unknown) => finish({ kind: 'done', status: 'error', value: errorText(e) }),
        );
      } catch (e) {
        finish({ kind: 'done', status: 'error', value: errorText(e) });
      }
    });
  }

  private async record(
    setup: AgentToolSetup,
    idx: RuleIndex,
    pass: PassState,
    a: Admitted,
    r: RunResult,
    /** The run's (ExecutionMeta.tenure): a run whose tenure is over records nothing. */
    tenure: string | null | undefined,
  ): Promise<ToolOutcome> {
    const { store } = this.deps;
    const name = a.tool.name;
    const finishedAt = this.deps.clock.now();
    const writer = { agentId: setup.agentId, tenure };
    if (r.kind === 'client') {
      // counted and claimed in admit; the result is recorded when the client returns it
      const saved = store.saveBatch(pass.batchId, pass.batch!, setup.tenantId, writer);
      if (isPromise(saved)) await saved;
      return {
        ...base(
          a.call,
          a.args,
          'client_required',
          'error',
          `[ClientToolPending] ${name} runs on the client`,
        ),
        requestHeartbeat: a.heartbeat,
        continueLoop: idx.continueLoop.has(name),
        startedAt: a.startedAt,
        ...(a.grantId !== undefined ? { grantId: a.grantId } : {}),
      };
    }
    let kind: OutcomeKind = 'executed';
    let status: 'success' | 'error' = 'error';
    let value: string;
    let error: ToolOutcome['error'];
    switch (r.kind) {
      case 'done':
        status = r.status;
        value = cutReturn(r.value, a.tool.return_char_limit ?? DEFAULT_RETURN_CHAR_LIMIT);
        if (status === 'error') error = { type: 'ToolError', message: value };
        break;
      case 'timeout':
        kind = 'timeout';
        value = renderRefusal(
          'Timeout',
          `${name} did not finish within ${setup.settings.toolTimeoutMs / 1000}s; ${UNKNOWN_OUTCOME}`,
        );
        error = { type: 'Timeout', message: value };
        break;
      case 'cancelled':
        value = renderRefusal('Cancelled', `${name} was stopped while running; ${UNKNOWN_OUTCOME}`);
        error = { type: 'Cancelled', message: value };
        break;
    }

    pass.history.push({
      toolCallId: a.call.toolCallId,
      toolName: name,
      status,
      returnValue: value,
      at: a.startedAt,
    });
    if (pass.phase === 'start') pass.phase = 'running';
    if (idx.startTools.has(name)) pass.startConstraintsDone = true;
    const exitLoop = idx.exitLoop.has(name);
    if (exitLoop) pass.phase = 'exit_requested';

    const batch = pass.batch!;
    // required_before_exit is met by a call that ran, whatever it returned (issue 3: "until it has
    // run"; Letta's ToolRulesSolver registers every call the rules allowed, failed or not)
    const ran = (batch.succeeded ??= {});
    ran[name] = (ran[name] ?? 0) + 1;
    if (status === 'success') {
      let must = batch.mustFollow;
      if (must?.includes(name)) must = batch.mustFollow = must.filter((t) => t !== name);
      const following = idx.following.get(name);
      if (following) {
        must = batch.mustFollow ??= [];
        for (const rule of following)
          for (const t of rule.tools) if (!must.includes(t)) must.push(t);
      }
    }
    batch.updatedAt = finishedAt;
    const saved = store.saveBatch(pass.batchId, batch, setup.tenantId, writer);
    if (isPromise(saved)) await saved;
    // Errors are never cached, so a failed call can be retried; a call that did not finish may have taken
    // effect, so an identical one is refused for the window (never answered from it).
    const unknown = r.kind === 'timeout' || r.kind === 'cancelled';
    if ((status === 'success' || unknown) && a.policy && a.key !== undefined)
      await this.remember(setup, a.policy, a.key, value, finishedAt, unknown, tenure);
    pass.exitRequirementsPending = pendingFor(idx, batch);

    const outcome: ToolOutcome = {
      toolCallId: a.call.toolCallId,
      toolName: name,
      arguments: a.args,
      kind,
      status,
      returnValue: value,
      requestHeartbeat: a.heartbeat,
      continueLoop: idx.continueLoop.has(name),
      exitLoop,
      startedAt: a.startedAt,
      finishedAt,
    };
    if (error) outcome.error = error;
    if (a.grantId !== undefined) outcome.grantId = a.grantId;
    return outcome;
  }

  private view(pass: PassState, batch: BatchState): RuleView {
    return {
      history: pass.history,
      startConstraintsDone: pass.startConstraintsDone,
      batch,
      now: this.deps.clock.now(),
      lastExecutionAt: null,
    };
  }

  private async loadBatch(pass: PassState): Promise<BatchState> {
    let b = this.deps.store.loadBatch(pass.batchId);
    if (isPromise(b)) b = await b;
    if (pass.batch) return pass.batch; // loaded meanwhile by a concurrent caller
    return (pass.batch = b ?? emptyBatch(this.deps.clock.now()));
  }

  /** Remembers a call for its dedupe window: a success, or one whose outcome is unknown. */
  private async remember(
    setup: AgentToolSetup,
    policy: DedupePolicy,
    key: string,
    result: string,
    at: number,
    unknown: boolean,
    tenure?: string | null,
  ): Promise<void> {
    const entry: DedupeEntry = {
      result,
      at,
      expiresAt: at + policy.windowMs,
      ...(unknown ? { unknown: true as const } : {}),
    };
    const put = this.deps.store.putDedupe(setup.agentId, key, entry, setup.tenantId, tenure);
    if (isPromise(put)) await put;
  }

  private newCallId(): string {
    return this.deps.ids?.prefixed('call') ?? `call-${randomUUID()}`;
  }
}

// ------------------------------------------------------------------ helpers

function pendingFor(idx: RuleIndex, batch: BatchState): string[] {
  const out: string[] = [];
  for (const t of idx.requiredBeforeExit) if (!batch.succeeded?.[t]) out.push(t);
  for (const t of batch.mustFollow ?? []) if (!out.includes(t)) out.push(t);
  return out;
}

/**
 * With ordering rules, a call that would run now (or be answered from the dedupe cache, which the pass
 * history records) after an earlier call of its turn that waits would run out of the order the rules judged
 * it in, and could change what they say of the waiting one once approved or answered: it is held, and
 * judged in its place once that one is decided (the waiting call answered). A call the client runs
 * (`onClient`) goes to it with the turn's earlier client calls, in order: only a call that waits for consent
 * comes after it. A call about to be asked about (`asking`) runs after the calls that wait for consent once
 * approved, except after a client tool's, which then waits for the client: it would run ahead (unless it
 * runs on the client too, after it).
 */
function runsAhead(
  idx: RuleIndex,
  awaiting: readonly AwaitingCall[],
  onClient: boolean,
  asking: boolean,
): AwaitingCall | undefined {
  if (!idx.hasOrderingRules || (asking && onClient)) return undefined;
  for (let i = awaiting.length - 1; i >= 0; i--) {
    const a = awaiting[i];
    if (asking ? !a.client && idx.tools.get(a.toolName)?.kind === 'client' : !onClient || !a.client)
      return a;
  }
  return undefined;
}

/**
 * A call that waits for consent or the client's result as the later calls of its turn see it (arguments
 * that were not JSON: no dedupe key).
 */
function awaitingCall(
  call: ToolCallRequest,
  args: Record<string, unknown>,
  client: boolean,
): AwaitingCall {
  const w: AwaitingCall = { toolCallId: call.toolCallId, toolName: call.name };
  if (typeof call.arguments !== 'string') w.key = canonicalKey(call.name, args);
  if (client) w.client = true;
  return w;
}

function concurrencySafe(idx: RuleIndex, call: ToolCallRequest): boolean {
  return !idx.hasOrderingRules && idx.tools.get(call.name)?.safety === 'read_only';
}

function plainArgs(call: ToolCallRequest): Record<string, unknown> {
  return typeof call.arguments === 'string' ? {} : call.arguments;
}

function base(
  call: ToolCallRequest,
  args: Record<string, unknown>,
  kind: OutcomeKind,
  status: 'success' | 'error',
  returnValue: string,
): ToolOutcome {
  return {
    toolCallId: call.toolCallId,
    toolName: call.name,
    arguments: args,
    kind,
    status,
    returnValue,
    requestHeartbeat: false,
    continueLoop: false,
    exitLoop: false,
  };
}

/** A held call (outcome `deferred`): the processor parks it with the waiting ones; it has no return yet. */
function held(call: ToolCallRequest, args: Record<string, unknown>, why: string): ToolOutcome {
  return base(call, args, 'deferred', 'error', `[ToolHeld] ${call.name} waits: ${why}`);
}

function refused(
  call: ToolCallRequest,
  args: Record<string, unknown>,
  code: ToolErrorType,
  detail: string,
  d: Denial | undefined,
  allowedNow: string[] | undefined,
): ToolOutcome {
  const text = renderRefusal(code, detail, allowedNow);
  const outcome = base(call, args, 'refused', 'error', text);
  outcome.error = d?.rule
    ? { type: code, message: text, rule: d.rule }
    : { type: code, message: text };
  return outcome;
}

/** A store or port failure: the call still gets an answer, never a thrown batch. */
function internalFailure(call: ToolCallRequest, e: unknown): ToolOutcome {
  const text = `[ToolError] ${call.name} could not be executed: ${errorText(e)}`;
  const outcome = base(call, plainArgs(call), 'refused', 'error', text);
  outcome.error = { type: 'ToolError', message: text };
  return outcome;
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A batch's state before its first call. */
function emptyBatch(now: number): BatchState {
  return {
    callCounts: {},
    succeeded: {},
    mustFollow: [],
    createdAt: now,
    updatedAt: now,
  };
}

/**
 * A call's arguments as they run: `request_heartbeat` taken out, a run_first rule's args over the model's,
 * and right after a constrain_child_tools parent (`lastTool`) the args its child_arg_nodes give the child.
 */
function admittedArgs(
  idx: RuleIndex,
  call: ToolCallRequest,
  lastTool?: string,
): { args: Record<string, unknown>; heartbeat: boolean } {
  const raw = call.arguments;
  if (typeof raw === 'string') return { args: {}, heartbeat: false };
  const heartbeat = requestsHeartbeat(raw.request_heartbeat);
  const prefilled = idx.startTools.get(call.name)?.args;
  const childArgs =
    lastTool === undefined ? undefined : idx.childArgs.get(lastTool)?.get(call.name);
  if (!('request_heartbeat' in raw) && !prefilled && !childArgs) return { args: raw, heartbeat };
  const args = { ...raw };
  delete args.request_heartbeat;
  if (prefilled) Object.assign(args, prefilled); // the rule's args override the model's
  if (childArgs) Object.assign(args, childArgs);
  return { args, heartbeat };
}

/** Said of a call that did not finish: the model must not take it for one that did nothing. */
const UNKNOWN_OUTCOME = 'its outcome is unknown (it may have taken effect)';

/** A return past the tool's `return_char_limit` is cut there, with Letta's note saying so. */
function cutReturn(value: string, limit: number): string {
  if (value.length <= limit) return value;
  return `${value.slice(0, limit)}... [NOTE: function output was truncated since it exceeded the character limit: ${value.length} > ${limit}]`;
}
