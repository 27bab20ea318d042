import { Inject, Injectable, Logger } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import { ID_GENERATOR } from '../common/ids';
import { RunEventsBus } from '../common/run-events';
import type { Clock, IdGenerator } from '../core/ports';
import type { MessageEntity } from './entities/message.entity';
import {
  awaitingAnswer,
  type ParkedCall,
  type RunEntity,
  type RunUsage,
  type TurnCall,
} from './entities/run.entity';
import { parksOn } from '../core/executor/contracts';
import { canonicalRuleType } from '../core/rules/tool-rule';
import { EMPTY_USAGE, mapMessage, MappedMessage } from './message.mapper';
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
 * Nothing lost, nothing run twice: a run its process left `running` (a crash, or an instance that lost the
 * agent: taken over, or its lease lapsed) ends failed/`interrupted`, its in-flight calls get an error
 * return (never a second execution), and an approved call whose tool had not started runs once in a new
 * continuation (no one is asked again). Called by the instance that has just taken the agent's lease,
 * before it processes anything.
 */
@Injectable()
export class RunRecovery {
  private readonly logger = new Logger('RunRecovery');

  constructor(
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
   * Ends a run whose process died (or lost the agent); its unanswered tool calls get an error return.
   * Approved calls that had not started park on it again: the caller resumes the agent's parked batch.
   * `decided`: the end its process decided, every message of the run stored, but could not store (its
   * writes failed): the run ends so (completed, parked, …), not as interrupted.
   */
  async interrupt(run: RunEntity, decided?: { end: RunEnd; at: number }): Promise<void> {
    const batch = await this.repo.batchMessages(run.batch_id, [
      'tool_call_message',
      'tool_return_message',
      'user_message',
      'system_message',
      'assistant_message',
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
    const stillParked = new Set(
      [...(parkedRun?.parked ?? []), ...(decided?.end.parked ?? [])].map((c) =>
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
    const cancelled = run.input.cancel_requested === true;
    // a run a user cancelled runs nothing more: its approved calls end unstarted (as do those of a run
    // that ended: its continuation ran them, the rest are parked with its end)
    const unstarted =
      cancelled || decided ? [] : await this.unstartedParkedCalls(run, unknown, keyOf, started);
    const carriedKeys = new Set(unstarted.map((c) => stepCallKey(c.step_id, c.tool_call_id)));
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
    const returns = await this.repo.append(
      run.agent_id,
      ended.flatMap((m) => {
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
    );
    await this.rememberUnknownOutcomes(run, ended.filter((m) => started.has(keyOf(m))).map(callOf));
    // a call that never started may have asked a person: that request ends (nothing will run it)
    await this.consent.denyPending(
      run.tenant_id,
      run.agent_id,
      unknown
        .filter((m) => !started.has(keyOf(m)) && !carriedKeys.has(keyOf(m)))
        .map((m) => callOf(m).tool_call_id),
      'interrupted: the run stopped before the call could run',
    );
    if (carried.length)
      await this.consent.restoreUnstartedApprovals(run.tenant_id, run.agent_id, carried);
    // the carried calls park on this run, so the usual resumption continues them in a new run
    const { parked, ...end } = decided?.end ?? {
      status: cancelled ? ('cancelled' as const) : ('failed' as const),
      stop_reason: cancelled ? ('cancelled' as const) : ('error' as const),
      usage: run.usage ?? (await this.storedUsage(run)),
      error: cancelled ? null : 'interrupted',
      error_type: null,
      parked: carried.length ? carried : null,
    };
    const at = decided?.at ?? now;
    await this.repo.finishRun(run, { ...end, parked }, at);
    this.announce(run, [...written, ...returns], end);
    if (parked?.length) await this.exec.executor.parkBatch(run.batch_id).catch(() => undefined);
    else await this.exec.executor.completeBatch(run.batch_id).catch(() => undefined);
    if (!carried.length)
      await this.agents.setLastStopReason(run.tenant_id, run.agent_id, end.stop_reason);
    if (decided) this.logger.warn(`run ${run.id}: its end (${end.stop_reason}) is stored now`);
    else
      this.logger.warn(
        `run ${run.id} was interrupted` +
          (started.size ? `; ${started.size} tool call(s) with unknown outcome` : '') +
          (carried.length
            ? `; ${carried.length} approved call(s) that had not started run now`
            : ''),
      );
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
    for (const s of steps) {
      usage.prompt_tokens += s.usage?.prompt_tokens ?? 0;
      usage.completion_tokens += s.usage?.completion_tokens ?? 0;
      usage.total_tokens += s.usage?.total_tokens ?? 0;
    }
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
   * The parked calls a continuation was running that never started: their decisions are stored, so they
   * carry over to the next continuation rather than fail. A cancelling continuation runs nothing.
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
    // (a client's tool results came with the interrupted run's input; those are not re-asked here.) A held
    // call that was not judged yet ends unstarted: its place after the calls it waited for is lost.
    return awaitingAnswer(parked).filter((c) => {
      const key = stepCallKey(c.step_id, c.tool_call_id);
      return !c.client && unanswered.has(key) && !started.has(key);
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
