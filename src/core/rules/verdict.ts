import type { BatchState, ToolErrorType, ToolExecution } from '../executor/contracts';
import type { ToolRule } from './tool-rule';

/** A check's answer. Denials carry the rule and a detail; the model-facing text is rendered in render-refusal.ts. */
export type Verdict =
  | { allowed: true }
  | {
      allowed: false;
      code: ToolErrorType;
      rule?: ToolRule;
      detail: string;
      /**
       * The call of this turn that waits (for consent or the client) whose fate decides this denial: an
       * ordering rule that could allow the call once the waiting one is decided (denied, or run with the
       * right status or output). The executor holds such a call until then instead of refusing it.
       */
      waitingOn?: AwaitingCall;
    };

export type Denial = Extract<Verdict, { allowed: false }>;

/** Shared, so an allowing check allocates nothing. */
export const ALLOW: Verdict = Object.freeze({ allowed: true });

export function deny(
  code: ToolErrorType,
  detail: string,
  rule?: ToolRule,
  waitingOn?: AwaitingCall,
): Denial {
  return waitingOn
    ? { allowed: false, code, rule, detail, waitingOn }
    : { allowed: false, code, rule, detail };
}

/** The read-only state a check sees. */
export interface RuleView {
  /** This pass's executions, oldest first. */
  history: readonly ToolExecution[];
  startConstraintsDone: boolean;
  batch: Readonly<BatchState>;
  now: number;
  /** Last execution of the tool under check (cooldown), when loaded. */
  lastExecutionAt: number | null;
  /**
   * This turn's earlier calls that wait for consent or for the client's result, in order: the rules see them
   * as run (batch counts, cooldowns, dedupe, and the pass rules: the last of them is the last call), so
   * nobody is asked to approve a call that would be refused once they run. What depends on their output or
   * status is not known yet.
   */
  awaiting?: readonly AwaitingCall[];
}

/** A call of the current turn that waits for a person's consent, or for the client that runs it. */
export interface AwaitingCall {
  toolCallId: string;
  toolName: string;
  /** Its dedupe key (`canonicalKey`), when its arguments were JSON. */
  key?: string;
  /** It runs on the client: admitted already, so the batch's counts and the cooldown hold it. */
  client?: true;
}

export type RuleOf<T extends ToolRule['type']> = Extract<ToolRule, { type: T }>;

/** The pass's last call that ran: a cached answer ran nothing, so it neither sets nor lifts a child rule. */
export function lastExecution(view: Pick<RuleView, 'history'>): ToolExecution | undefined {
  for (let i = view.history.length - 1; i >= 0; i--)
    if (!view.history[i].cached) return view.history[i];
  return undefined;
}

/**
 * The call a new one comes right after: this turn's last call that waits for consent or the client (it runs
 * first, once approved or answered), else the pass's last execution.
 */
export function lastCall(
  view: Pick<RuleView, 'history' | 'awaiting'>,
): ToolExecution | AwaitingCall | undefined {
  const w = view.awaiting;
  return w?.length ? w[w.length - 1] : lastExecution(view);
}

export const isWaiting = (c: ToolExecution | AwaitingCall): c is AwaitingCall => !('status' in c);

/** This turn's first call of the tool that waits (for consent or the client). */
export function waitingCallOf(view: RuleView, tool: string): AwaitingCall | undefined {
  return view.awaiting?.find((w) => w.toolName === tool);
}

/** What the waiting call waits for, as refusals say it. */
export const waitingFor = (w: AwaitingCall): string =>
  w.client ? "the client's result" : 'consent';

/** How a refusal names the waiting call it depends on. */
export const waits = (w: AwaitingCall): string =>
  `its call ${w.toolCallId} in this turn waits for ${waitingFor(w)}`;

export function hasRun(view: RuleView, tool: string, successOnly: boolean): boolean {
  for (const h of view.history) {
    if (h.toolName === tool && (!successOnly || (h.status === 'success' && !h.cached))) return true;
  }
  return false;
}

export const list = (names: readonly string[]): string =>
  names.length ? names.join(', ') : 'none';
