import { Inject, Injectable, Logger } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import { ID_GENERATOR } from '../common/ids';
import { RunEventsBus } from '../common/run-events';
import type { Clock, IdGenerator } from '../core/ports';
import type { MessageEntity } from './entities/message.entity';
import {
  type ParkedCall,
  parkedFrom,
  type RunEntity,
  type RunUsage,
  type StoredParks,
  type TurnCall,
} from './entities/run.entity';
import { type AgentToolSetup, parksOn } from '../core/executor/contracts';
import { continuesAfterTools } from '../core/agents/agent-type';
import { resolveBudgets } from '../core/loop/budgets';
import type { OutcomeView, TurnView } from '../core/loop/loop-decision';
import { runStatusFor } from '../core/loop/stop-reason';
import { storedEnd, type StoredRun } from '../core/loop/stored-end';
import { type RuleIndex, ruleIndexFor } from '../core/rules/rule-index';
import { canonicalRuleType } from '../core/rules/tool-rule';
import { requestsHeartbeat } from '../core/tools/heartbeat';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { clientToolDefinition } from './agent-processor.service';
import { addModelUsage, EMPTY_USAGE, mapMessage, MappedMessage } from './message.mapper';
import {
  inputMessageRows,
  newMessageRow,
  ProcessingRepository,
  type RunEnd,
} from './processing.repository';
import { RunCallbacks } from './run-callbacks';
import { parseArgs } from '../core/loop/tool-arguments';
import { stepCallKey } from '../core/loop/tool-call-ids';
import {
  AGENT_PORT,
  AgentPort,
  CONSENT_BRIDGE,
  ConsentBridge,
  EXECUTOR_PORT,
  ExecutorPort,
  TOOLS_PORT,
  ToolsPort,
} from './processing.ports';

export const OUTCOME_UNKNOWN =
  '[ToolError] outcome unknown (the run was interrupted while the tool was running: its server stopped or lost the agent); it was not run again';
export const NOT_STARTED =
  '[ToolError] not run: the run was interrupted before the tool started (its server stopped or lost the agent); nothing was executed';

/**
 * Nothing lost, nothing run twice: a run its process left `running` (a crash, an instance that lost the
 * agent: taken over, or its lease lapsed, or a write that kept failing) ends as what it stored says: as
 * its loop decided (completed end_turn, tool_rule, parked, …) when every call it made has its stored
 * return and that decision is in the store; else failed/`interrupted`, its in-flight calls getting an
 * error return (never a second execution), and an approved call whose tool had not started (or a client
 * call the client had answered) going on once in a new continuation (no one is asked again). Called by
 * the instance that has just taken the agent's lease, before it processes anything.
 */
@Injectable()
export class RunRecovery {
  private readonly logger = new Logger('RunRecovery');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    private readonly repo: ProcessingRepository,
    private readonly bus: RunEventsBus,
    private readonly callbacks: RunCallbacks,
    @Inject(AGENT_PORT) private readonly agents: AgentPort,
    @Inject(EXECUTOR_PORT) private readonly exec: ExecutorPort,
    @Inject(CONSENT_BRIDGE) private readonly consent: ConsentBridge,
    @Inject(TOOLS_PORT) private readonly tools: ToolsPort,
  ) {}

  /**
   * Ends a run whose process died, lost the agent, or could not store its end: as its loop decided when
   * the store settles it (the same end on any instance), else interrupted, its unanswered tool calls
   * getting an error return. Approved calls that had not started (and client calls the client answered)
   * park on it again: the caller resumes the agent's parked batch.
   */
  async interrupt(run: RunEntity): Promise<void> {
    const batch = await this.repo.batchMessages(run.batch_id, [
      'tool_call_message',
      'tool_return_message',
      'user_message',
      'system_message',
      'assistant_message',
      'approval_request_message',
    ]);
    // killed between its claim and its first write (its input): the message it was accepted with is
    // kept, not lost
    const written: MessageEntity[] = [];
    if (!batch.some((m) => m.run_id === run.id))
      written.push(
        ...(await this.repo.append(
          run.agent_id,
          inputMessageRows(run, () => this.ids.prefixed('message'), this.clock.now()),
        )),
      );
    // a call is its tool_call_id in the step that made it: a provider may reuse ids across responses
    const returnKey = (m: MessageEntity) => stepCallKey(m.step_id, String(m.payload.tool_call_id));
    const returned = batch.filter((m) => m.message_type === 'tool_return_message');
    const answered = new Set(returned.filter((m) => !m.payload._held).map(returnKey));
    // a held turn's call that finished: its return, stored hidden until the turn was shown (it never was)
    const finished = new Map(returned.filter((m) => m.payload._held).map((m) => [returnKey(m), m]));
    const parkedRun = await this.repo.findParkedRun(run.tenant_id, run.agent_id);
    // a user's cancel (or a cancelling continuation) answered `cancelled`: so it ends, running nothing more
    const cancelled = run.input.cancel_requested === true || run.input.cancel === true;
    const parking = cancelled ? null : parkingOf(run, batch, answered);
    const stillParked = new Set(
      [...(parkedRun?.parked ?? []), ...(parking ?? [])].map((c) =>
        stepCallKey(c.step_id, c.tool_call_id),
      ),
    );
    const now = this.clock.now();
    const callOf = (m: MessageEntity) =>
      m.payload.tool_call as { tool_call_id: string; name: string; arguments: string };
    const keyOf = (m: MessageEntity) => stepCallKey(m.step_id, String(callOf(m)?.tool_call_id));
    // a held call of a parked turn is shown (a row without `_held`) beside its hidden row: one call
    const shownCalls = new Set(
      batch.filter((m) => m.message_type === 'tool_call_message' && !m.payload._held).map(keyOf),
    );
    const orphans = batch.filter((m) => {
      if (m.message_type !== 'tool_call_message') return false;
      const key = keyOf(m);
      if (m.payload._held && shownCalls.has(key)) return false;
      return !answered.has(key) && !stillParked.has(key);
    });
    const unknown = orphans.filter((m) => !finished.has(keyOf(m)));
    // "started" = claimed: the claim is committed before a tool starts
    const started = new Set<string>();
    for (const m of unknown) {
      if (await this.exec.executor.wasStarted(run.agent_id, callOf(m).tool_call_id, m.step_id))
        started.add(keyOf(m));
    }
    // a run a user cancelled runs nothing more: its approved calls end unstarted
    const unstarted = cancelled
      ? []
      : await this.unstartedParkedCalls(run, unknown, keyOf, started);
    const carriedKeys = new Set(unstarted.map((c) => stepCallKey(c.step_id, c.tool_call_id)));
    // A call that never started may have asked a person: a request still pending ends (nothing will run
    // it); one approved before the run could park (a request is pushed as it is made, while the rest of
    // its turn runs) is carried as one approved while parked. Denied first: a decision racing this either
    // lands before (and the call is carried) or finds the request closed.
    const asked = unknown.filter((m) => !started.has(keyOf(m)) && !carriedKeys.has(keyOf(m)));
    await this.consent.denyPending(
      run.tenant_id,
      run.agent_id,
      asked.map((m) => callOf(m).tool_call_id),
      'interrupted: the run stopped before the call could run',
    );
    const approvedEarly = cancelled ? [] : await this.approvedBeforeParking(run, asked, callOf);
    for (const c of approvedEarly) {
      unstarted.push(c);
      carriedKeys.add(stepCallKey(c.step_id, c.tool_call_id));
    }
    const ended = orphans.filter((m) => !carriedKeys.has(keyOf(m)));
    // The calls of their turn that no longer wait (answered by the run that died, or ended here): the next
    // continuation decides how the turn ends (an exit_loop call that ran ends the batch) from how they
    // ended. (A continuation's returns are never stored hidden.)
    const endOf = new Map<string, Pick<TurnCall, 'kind' | 'status'>>(
      returned.filter((m) => !m.payload._held).map((m) => [returnKey(m), turnEnd(m.payload)]),
    );
    for (const m of ended)
      endOf.set(keyOf(m), {
        kind: started.has(keyOf(m)) ? 'executed' : 'refused',
        status: 'error',
      });
    const exits = unstarted.some((c) => c.turn) ? await this.exitLoopTools(run) : new Set<string>();
    const carried = unstarted.map((c) => {
      if (!c.turn) return c;
      const turn = c.turn.map((t) => {
        const end = parksOn(t) ? endOf.get(stepCallKey(c.step_id, t.tool_call_id)) : undefined;
        return end
          ? { ...t, ...end, exitLoop: end.kind !== 'refused' && exits.has(t.toolName) }
          : t;
      });
      return { ...c, turn };
    });
    const row = (
      type: MessageEntity['message_type'],
      payload: Record<string, unknown>,
      m: MessageEntity,
    ) => newMessageRow(this.ids.prefixed('message'), run, type, payload, m.step_id, now);
    const early = new Set(approvedEarly.map((c) => stepCallKey(c.step_id, c.tool_call_id)));
    const returns = await this.repo.append(run.agent_id, [
      // an early-approved call of a held turn is shown now; its return comes when it runs
      ...orphans
        .filter((m) => m.payload._held && early.has(keyOf(m)))
        .map((m) => row('tool_call_message', { tool_call: callOf(m) }, m)),
      ...ended.flatMap((m) => {
        const call = callOf(m);
        const { _held, ...result } = finished.get(keyOf(m))?.payload ?? {};
        return [
          // a call held back until its outcome was known is shown now, before its return
          ...(m.payload._held ? [row('tool_call_message', { tool_call: call }, m)] : []),
          row(
            'tool_return_message',
            _held
              ? result
              : {
                  tool_return: started.has(keyOf(m)) ? OUTCOME_UNKNOWN : NOT_STARTED,
                  status: 'error',
                  tool_call_id: call.tool_call_id,
                  name: call.name,
                  error_type: 'ToolError',
                },
            m,
          ),
        ];
      }),
    ]);
    await this.rememberUnknownOutcomes(run, ended.filter((m) => started.has(keyOf(m))).map(callOf));
    const approved = carried.filter((c) => !c.client);
    if (approved.length)
      await this.consent.restoreUnstartedApprovals(run.tenant_id, run.agent_id, approved);
    const usage = run.usage ?? (await this.storedUsage(run));
    // Every call the run made has its return, or waits on its approval request: the run got as far as its
    // loop's decision, which what it stored may settle (a model call that failed leaves no trace)
    const decided =
      cancelled || orphans.length ? null : await this.decidedEnd(run, batch, parking, usage);
    // the carried calls park on this run, so the usual resumption continues them in a new run
    const { parked, ...end }: RunEnd = decided ?? {
      status: cancelled ? 'cancelled' : 'failed',
      stop_reason: cancelled ? 'cancelled' : 'error',
      usage,
      error: cancelled ? null : 'interrupted',
      error_type: null,
      parked: carried.length ? carried : null,
    };
    await this.repo.finishRun(run, { ...end, parked }, now);
    this.announce(run, [...written, ...returns], end);
    if (parked?.length) await this.exec.executor.parkBatch(run.batch_id).catch(() => undefined);
    else await this.exec.executor.completeBatch(run.batch_id).catch(() => undefined);
    if (!carried.length)
      await this.agents.setLastStopReason(run.tenant_id, run.agent_id, end.stop_reason);
    if (decided)
      this.logger.warn(
        `run ${run.id}: its end (${end.stop_reason}) is read back from what it stored`,
      );
    else
      this.logger.warn(
        `run ${run.id} was interrupted` +
          (started.size ? `; ${started.size} tool call(s) with unknown outcome` : '') +
          (carried.length
            ? `; ${carried.length} approved call(s) that had not started run now`
            : ''),
      );
  }

  /**
   * The end the run's loop decided, when what it stored settles it (see `storedEnd`): parked on its
   * approval request when it has one that waits, else as the loop decides on its last turn. Null: nothing
   * stored says (the run ends interrupted).
   */
  private async decidedEnd(
    run: RunEntity,
    batch: MessageEntity[],
    parking: ParkedCall[] | null,
    usage: RunUsage,
  ): Promise<RunEnd | null> {
    const end = { usage, error: null, error_type: null, parked: null };
    if (parking)
      return { ...end, status: 'completed', stop_reason: 'requires_approval', parked: parking };
    const agent = await this.agents.get(run.tenant_id, run.agent_id).catch(() => null);
    if (!agent) return null;
    const tools = [
      ...(await this.tools.resolve(run.tenant_id, agent.tools)),
      ...(run.input.client_tools ?? []).map(clientToolDefinition),
    ];
    const setup = this.exec.setupFor(agent, tools);
    const last = await this.lastTurn(run, batch, setup);
    if (!last) return null;
    const { executor } = this.exec;
    const turn: TurnView | null = last.outcomes && {
      outcomes: last.outcomes,
      // read from the batch's state, which a batch drops only once its run's end is stored
      pendingExitRequirements: await executor.pendingExitRequirements(
        setup,
        executor.newPass(setup, run.batch_id),
      ),
      exitRequested: last.exitRequested,
      rules: agent.tool_rules,
      continueAfterTools: last.resumed || continuesAfterTools(agent.agent_type),
      remindersGiven: last.remindersGiven,
      maxReminders: this.config.processing.max_reminders,
    };
    const stop = storedEnd({
      turn,
      after: last.after,
      budgets: resolveBudgets(
        { max_steps: run.input.max_steps, ...run.input.budgets },
        { max_steps: agent.max_steps, ...agent.budgets },
        this.config.processing,
      ),
      spent: await this.repo.batchSpent(run.batch_id),
    });
    return (
      stop && {
        ...end,
        status: runStatusFor(stop.stopReason),
        stop_reason: stop.stopReason,
        error: stop.detail,
      }
    );
  }

  /**
   * The last turn the run decided on, as the loop saw it: its last model turn (each call's outcome as its
   * stored return says), or, for a continuation that made no model call, the turn it resumed with the
   * parked calls resolved; and what the run stored after it. Null when the store does not hold it whole.
   */
  private async lastTurn(
    run: RunEntity,
    batch: MessageEntity[],
    setup: AgentToolSetup,
  ): Promise<StoredTurn | null> {
    const idx = ruleIndexFor(setup);
    const returns = new Map(
      batch
        .filter((m) => m.message_type === 'tool_return_message' && !m.payload._held)
        .map((m) => [stepCallKey(m.step_id, String(m.payload.tool_call_id)), m]),
    );
    const outcome = (key: string, name: string, heartbeat: boolean) => {
      const ret = returns.get(key);
      return ret ? storedOutcome(idx, ret, name, heartbeat) : null;
    };
    const mine = batch.filter((m) => m.run_id === run.id);
    const steps = await this.repo.runSteps(run.tenant_id, run.id);
    const step = steps.at(-1)?.id;
    if (step) {
      // the turn's calls in the model's order (a held turn's hidden rows come first, then shown again)
      const calls = new Map<string, ToolCallPayload>();
      for (const m of batch)
        if (m.message_type === 'tool_call_message' && m.step_id === step) {
          const call = m.payload.tool_call as ToolCallPayload;
          const key = stepCallKey(step, call.tool_call_id);
          if (!calls.has(key)) calls.set(key, call);
        }
      const outcomes: OutcomeView[] = [];
      for (const [key, call] of calls) {
        const args = parseArgs(call.arguments);
        const o = outcome(
          key,
          call.name,
          typeof args !== 'string' && requestsHeartbeat(args.request_heartbeat),
        );
        if (!o) return null;
        outcomes.push(o);
      }
      const first = batch.findIndex((m) => m.step_id === step);
      // the pass the turn was made in starts at the batch's message or at the heartbeat before it
      const passStart = lastIndex(
        batch.slice(0, first),
        (m) => m.payload._input === true || userMessageType(m) === 'heartbeat',
      );
      const runFirst = batch.findIndex((m) => m.step_id === steps[0].id);
      const after = tailOf(mine.slice(lastIndex(mine, (m) => m.step_id === step) + 1));
      if (!after) return null;
      return {
        outcomes,
        // an exit_loop call that ran earlier in the pass (its exit requirements were pending then)
        exitRequested: batch.slice(passStart + 1, first).some((m) => {
          const o = returns.get(stepCallKey(m.step_id, String(m.payload.tool_call_id)));
          return o === m && storedOutcome(idx, m, String(m.payload.name), false).exitLoop;
        }),
        // the reminders this run gave in the pass since its first model call (the loop counts those)
        remindersGiven: batch
          .slice(Math.max(passStart + 1, runFirst), first)
          .filter((m) => m.run_id === run.id && userMessageType(m) === 'system_alert').length,
        resumed: false,
        after,
      };
    }
    const none = { outcomes: null, exitRequested: false, remindersGiven: 0 };
    if (run.input.kind !== 'resume') {
      const after = tailOf(mine);
      return after && { ...none, resumed: false, after };
    }
    // a continuation that made no model call: the parked calls it resolved decide their turn's end
    const parked = (await this.repo.findRunById(run.input.resumes_run_id ?? ''))?.parked ?? [];
    const resolved = new Set(parked.map((c) => stepCallKey(c.step_id, c.tool_call_id)));
    const lastResolved = lastIndex(
      mine,
      (m) =>
        m.message_type === 'tool_return_message' &&
        resolved.has(stepCallKey(m.step_id, String(m.payload.tool_call_id))),
    );
    const after = tailOf(mine.slice(lastResolved + 1));
    const turn = parked[0]?.turn;
    if (!after || !turn) return after && { ...none, resumed: true, after };
    const outcomes: OutcomeView[] = [];
    for (const t of turn) {
      // (its heartbeat does not matter: a continuation's loop goes on after calls that ran)
      const o = parksOn(t)
        ? outcome(stepCallKey(parked[0].step_id, t.tool_call_id), t.toolName, false)
        : t;
      if (!o) return null;
      outcomes.push(o);
    }
    return {
      outcomes,
      exitRequested: parked[0].pass?.phase === 'exit_requested',
      remindersGiven: 0,
      resumed: true,
      after,
    };
  }

  /** The agent's exit_loop tools (none once it is deleted). */
  private async exitLoopTools(run: RunEntity): Promise<Set<string>> {
    const agent = await this.agents.get(run.tenant_id, run.agent_id).catch(() => null);
    return new Set(
      (agent?.tool_rules ?? []).flatMap((r) =>
        canonicalRuleType(r.type) === 'exit_loop' && 'tool_name' in r ? [r.tool_name] : [],
      ),
    );
  }

  /** What the run's stored steps used: its usage is written only at its end, which a crash skipped. */
  private async storedUsage(run: RunEntity): Promise<RunUsage> {
    const steps = await this.repo.runSteps(run.tenant_id, run.id);
    const usage = { ...EMPTY_USAGE, step_count: steps.length };
    for (const s of steps) addModelUsage(usage, s.usage);
    return usage;
  }

  /**
   * The run's end, as a run processed to its end announces it: its streams, WebSocket subscribers and
   * waiting callers on every instance see the returns written here and the end, webhooks and its
   * callback (stored with the end) are sent.
   */
  private announce(
    run: RunEntity,
    written: MessageEntity[],
    end: Pick<RunEntity, 'status' | 'stop_reason' | 'usage' | 'error' | 'error_type'>,
  ): void {
    const publish = (
      type: string,
      data: Record<string, unknown>,
      form: MappedMessage['form'] = null,
    ) =>
      this.bus.publish({
        tenantId: run.tenant_id,
        agentId: run.agent_id,
        runId: run.id,
        type,
        data,
        ...(form ? { sendMessageForm: form } : {}),
      });
    for (const m of written) {
      const mapped = mapMessage(m);
      publish(m.payload._input ? 'input_message' : 'message', mapped.letta, mapped.form);
    }
    publish('run.completed', { ...end });
    if (run.input.callback_url) this.callbacks.kick(); // stored with the end
  }

  /** Calls whose outcome is unknown are refused if made again within their dedupe window. */
  private async rememberUnknownOutcomes(
    run: RunEntity,
    calls: { tool_call_id: string; name: string; arguments: string }[],
  ): Promise<void> {
    if (calls.length === 0) return;
    const agent = await this.agents.get(run.tenant_id, run.agent_id).catch(() => null);
    if (!agent) return; // deleted: nothing will call its tools again
    const setup = this.exec.setupFor(agent, await this.tools.resolve(run.tenant_id, agent.tools));
    for (const c of calls)
      await this.exec.executor.rememberUnknownOutcome(
        setup,
        { toolCallId: c.tool_call_id, name: c.name, arguments: parseArgs(c.arguments) },
        OUTCOME_UNKNOWN,
      );
  }

  /**
   * The calls among these (of this run, never started) whose request, made by this run, a person approved
   * before the run could park on them, as the parked calls they would have been (run in a new pass: the
   * turn's pass was not stored).
   */
  private async approvedBeforeParking(
    run: RunEntity,
    calls: MessageEntity[],
    callOf: (m: MessageEntity) => { tool_call_id: string; name: string; arguments: string },
  ): Promise<ParkedCall[]> {
    if (calls.length === 0) return [];
    const approved = await this.consent.approvedFor(
      run.tenant_id,
      run.agent_id,
      run.id,
      calls.map((m) => callOf(m).tool_call_id),
    );
    return calls.flatMap((m): ParkedCall[] => {
      const call = callOf(m);
      const request = approved.find((a) => a.tool_call_id === call.tool_call_id);
      if (!request) return [];
      const args = parseArgs(call.arguments);
      return [
        {
          tool_call_id: call.tool_call_id,
          name: call.name,
          // (a call with invalid arguments is refused before anyone is asked)
          arguments: typeof args === 'string' ? {} : args,
          request_id: request.request_id ?? null,
          step_id: m.step_id,
        },
      ];
    });
  }

  /**
   * The parked calls a continuation was running that never started: their decisions are stored, so they
   * carry over to the next continuation rather than fail; and the client calls the client had answered in
   * its request (their answer is carried with them, to be recorded in its place in the turn: what the
   * client ran is not lost, and an exit_loop rule on it still ends the batch). A cancelling continuation
   * runs nothing.
   */
  private async unstartedParkedCalls(
    run: RunEntity,
    orphans: MessageEntity[],
    keyOf: (m: MessageEntity) => string,
    started: Set<string>,
  ): Promise<ParkedCall[]> {
    if (run.input.kind !== 'resume' || run.input.cancel || !run.input.resumes_run_id) return [];
    const unanswered = new Set(orphans.map(keyOf));
    const parked = (await this.repo.findRunById(run.input.resumes_run_id))?.parked ?? [];
    const answers = new Map((run.input.approvals ?? []).map((a) => [a.tool_call_id, a]));
    // A held call that was not judged yet ends unstarted: its place after the calls it waited for is lost.
    return parked.flatMap((c): ParkedCall[] => {
      const key = stepCallKey(c.step_id, c.tool_call_id);
      if (c.deferred || !unanswered.has(key)) return [];
      if (!c.client) return started.has(key) ? [] : [c];
      // (claimed when it was admitted: the client ran it, or said it did not)
      const answer = answers.get(c.tool_call_id) ?? c.client.answer;
      return answer ? [{ ...c, client: { ...c.client, answer } }] : [];
    });
  }
}

/**
 * How a call whose return is stored ended, as its turn records it: run (with an error too: the tool's
 * own), timed out, or refused (a rule, a denial, cancelled: it never ran).
 */
function turnEnd(p: Record<string, unknown>): Pick<TurnCall, 'kind' | 'status'> {
  const status = p.status === 'success' ? 'success' : 'error';
  if (p.error_type === undefined || p.error_type === 'ToolError')
    return { kind: p.tool_return === NOT_STARTED ? 'refused' : 'executed', status };
  return { kind: p.error_type === 'Timeout' ? 'timeout' : 'refused', status };
}

/** A call's outcome as the loop sees it, read from its stored return. */
function storedOutcome(
  idx: RuleIndex,
  ret: MessageEntity,
  name: string,
  heartbeat: boolean,
): OutcomeView {
  const { kind, status } = turnEnd(ret.payload);
  return {
    toolName: name,
    kind,
    status,
    requestHeartbeat: kind !== 'refused' && heartbeat,
    continueLoop: idx.continueLoop.has(name),
    exitLoop: kind !== 'refused' && idx.exitLoop.has(name),
    returnValue: typeof ret.payload.tool_return === 'string' ? ret.payload.tool_return : '',
  };
}

/** What recovery reads of the last turn a run decided on (see `lastTurn`). */
interface StoredTurn {
  /** The loop's view of its calls; null: no turn to decide on (no model call yet, or a turn not kept). */
  outcomes: OutcomeView[] | null;
  exitRequested: boolean;
  remindersGiven: number;
  /** Resolved by a continuation, whose loop goes on after calls that ran (as the v1 loop). */
  resumed: boolean;
  after: StoredRun['after'];
}

interface ToolCallPayload {
  tool_call_id: string;
  name: string;
  arguments: string;
}

/**
 * The calls the run parks on: those its last approval request keeps (`_parks`), when none of them has a
 * return (the run parked, and its end was not stored). Null: it did not park.
 */
function parkingOf(
  run: RunEntity,
  batch: MessageEntity[],
  answered: Set<string>,
): ParkedCall[] | null {
  const i = lastIndex(
    batch,
    (m) => m.run_id === run.id && m.message_type === 'approval_request_message',
  );
  const parks = i < 0 ? undefined : (batch[i].payload._parks as StoredParks | undefined);
  if (!parks) return null;
  const parked = parkedFrom(parks);
  return parked.some((c) => answered.has(stepCallKey(c.step_id, c.tool_call_id))) ? null : parked;
}

/** What a run stored after its last turn (its request's own messages aside); null: not one thing the loop writes. */
function tailOf(after: MessageEntity[]): StoredRun['after'] | null {
  const rest = after.filter((m) => m.payload._input !== true);
  if (rest.length === 0) return 'nothing';
  if (rest.length > 1) return null;
  const type = userMessageType(rest[0]);
  return type === 'system_alert' ? 'reminder' : type === 'heartbeat' ? 'heartbeat' : null;
}

/** The `type` of a user_message the loop writes (`heartbeat`, `system_alert`: a rule reminder). */
function userMessageType(m: MessageEntity): string | null {
  if (m.message_type !== 'user_message' || m.payload._input === true) return null;
  const content = m.payload.content;
  if (typeof content !== 'string') return null;
  try {
    const parsed = JSON.parse(content) as { type?: unknown };
    return typeof parsed.type === 'string' ? parsed.type : null;
  } catch {
    return null;
  }
}

function lastIndex<T>(items: T[], match: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (match(items[i])) return i;
  return -1;
}
