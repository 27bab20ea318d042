import type { MessageContent } from '../../core/loop/content-parts';
import type { PassState } from '../../core/executor/contracts';
import type { OutcomeView } from '../../core/loop/loop-decision';
import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { BigIntColumn, EpochMsColumn, JsonColumn } from '../../database/columns';
import type { BudgetFields } from '../../core/loop/budgets';
import type { LlmConfig } from '../../models/model-provider';
import type { RunStatus, StopReason } from '../../core/loop/stop-reason';

export interface RunUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  step_count: number;
  /** Summed over the steps whose endpoint reported them (ModelUsage); absent when none did. */
  cached_input_tokens?: number;
  reasoning_tokens?: number;
}

/** What the request asked for; kept with the run so a queued run survives a restart. */
export interface RunInput {
  kind: 'message' | 'resume';
  /** How the client asked: answered at once (`async`) or waited on (`sync`, `stream`). */
  mode: 'sync' | 'stream' | 'async';
  /** The user messages of the request, as `{role, content}` with text content. */
  messages: { role: string; content: MessageContent; otid?: string }[];
  max_steps?: number | null;
  /** The request's own budgets (each over the agent's, which are over the config's). */
  budgets?: Partial<BudgetFields>;
  /** Stream the model's text as it is generated (Letta's `stream_tokens`, on streaming requests). */
  stream_tokens?: boolean;
  /** Letta's `background` on a streaming request (answered as the run's `background`). */
  background?: boolean;
  /** resume: the parked run continued by this one. */
  resumes_run_id?: string;
  /** Approvals as the client sent them (in-band), for the approval_response_message. */
  approvals?: InBandAnswer[];
  /** Letta's `client_tools` of the request: offered to the model, run by the client. */
  client_tools?: ClientToolSpec[];
  /** resume after a cancellation: the parked calls are denied and the batch ends `cancelled`. */
  cancel?: boolean;
  /**
   * A cancel answered while the run ran on another instance: if that instance dies before it hears it,
   * recovery ends the run `cancelled` (what the cancel answered), not interrupted, and runs nothing more.
   */
  cancel_requested?: boolean;
  /** Letta's `callback_url` (async requests): POSTed the run's outcome once it ends (RunCallbacks). */
  callback_url?: string;
  /** The request's `use_assistant_message` when false (answered in the run's `request_config`). */
  use_assistant_message?: false;
  /** The request's `include_return_message_types` (answered in the run's `request_config`). */
  include_return_message_types?: string[];
  /** Letta's `override_model`, resolved when the request came: the model of this run, not the agent's. */
  override_model?: LlmConfig;
}

/**
 * What the last attempt at a run's `callback_url` answered (`sent_at` null: not sent, `error` says why);
 * the attempts themselves are `run_callbacks` rows (RunCallbackEntity).
 */
export interface RunCallback {
  sent_at: number | null;
  status_code: number | null;
  error: string | null;
}

/** A tool the client declared for one request (Letta's `client_tools`). */
export interface ClientToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** An in-band answer: a decision (`approval`), or a client tool's result (Letta's `ToolReturn`). */
export interface InBandAnswer {
  tool_call_id: string;
  approve: boolean;
  reason?: string | null;
  /** A client tool's result: present when the client ran the tool. */
  tool_return?: string;
  status?: 'success' | 'error';
}

/** A parked call waiting for a decision or a client's result (stop reason requires_approval). */
export interface ParkedCall {
  tool_call_id: string;
  name: string;
  arguments: Record<string, unknown>;
  request_id: string | null;
  step_id: string | null;
  /** Set for a client tool the client must run: admitted (and counted) when it parked. */
  client?: {
    heartbeat: boolean;
    started_at: number;
    /**
     * What the client answered, carried by recovery from a continuation that died before storing it: the
     * call waits for nobody, the next continuation records the answer in its place in the turn.
     */
    answer?: InBandAnswer;
  };
  /**
   * Held (outcome `deferred`): an earlier call of its turn waits, and whether this one may run depends on
   * it. Nobody was asked about it and nothing of it ran; it is not in the approval request and takes no
   * answer. Once the calls before it are decided it is judged, in its place, as a call just made.
   */
  deferred?: true;
  /**
   * The pass the call was made in (without its batch cache): the approved call runs in that pass, whose
   * ordering rules it already satisfied, and the batch then continues in a new pass.
   */
  pass?: Omit<PassState, 'batch'>;
  /**
   * Every call of the turn that parked, in call order, as the loop decides on it (the parked ones as
   * parked; only the last keeps its return, for conditional rules): the loop decides on the whole turn
   * once the parked calls are resolved, so an exit_loop call that ran beside them still ends the batch.
   */
  turn?: TurnCall[];
}

export type TurnCall = OutcomeView & { tool_call_id: string };

/**
 * The parked calls a decision or the client's result answers (a held call takes none, nor a client call
 * whose answer recovery carried).
 */
export const awaitingAnswer = (calls: readonly ParkedCall[]): ParkedCall[] =>
  calls.filter((c) => !c.deferred && !c.client?.answer);

/**
 * The calls a turn parks on, as its approval_request_message stores them (`_parks`, internal): stored with
 * the request, before the run's end, so that recovery parks a run whose end was not stored as it parked.
 * The pass and the turn are the same for every call of a turn: kept once.
 */
export interface StoredParks {
  calls: Omit<ParkedCall, 'pass' | 'turn'>[];
  pass?: ParkedCall['pass'];
  turn?: TurnCall[];
}

export function storedParks(parked: ParkedCall[]): StoredParks {
  const { pass, turn } = parked[0];
  return {
    calls: parked.map(({ pass: _pass, turn: _turn, ...c }) => c),
    ...(pass ? { pass } : {}),
    ...(turn ? { turn } : {}),
  };
}

export function parkedFrom(s: StoredParks): ParkedCall[] {
  return s.calls.map((c) => ({
    ...c,
    ...(s.pass ? { pass: s.pass } : {}),
    ...(s.turn ? { turn: s.turn } : {}),
  }));
}

@Entity('runs')
@Index('idx_runs_agent', ['tenant_id', 'agent_id', 'created_at'])
@Index('idx_runs_status', ['status'])
@Index('idx_runs_tenant_time', ['tenant_id', 'created_at', 'id'])
@Index('idx_runs_parked', ['tenant_id', 'agent_id', 'created_at'], {
  where: 'parked IS NOT NULL AND continued_by IS NULL',
})
@Index('idx_runs_request_key', ['agent_id', 'request_key'], {
  unique: true,
  where: 'request_key IS NOT NULL',
})
export class RunEntity {
  @PrimaryColumn({ type: 'varchar' })
  id!: string;

  @Column({ type: 'varchar' })
  tenant_id!: string;

  @Column({ type: 'varchar' })
  agent_id!: string;

  @Column({ type: 'varchar' })
  status!: RunStatus;

  @Column({ type: 'varchar', nullable: true })
  stop_reason!: StopReason | null;

  @Column({ type: 'varchar' })
  batch_id!: string;

  /** The conversation the run belongs to (null: the agent's default one). */
  @Column({ type: 'varchar', length: 64, nullable: true })
  conversation_id!: string | null;

  @JsonColumn()
  input!: RunInput;

  @JsonColumn({ nullable: true })
  usage!: RunUsage | null;

  /** Failure detail (`interrupted`, the provider's message). */
  @Column({ type: 'text', nullable: true })
  error!: string | null;

  /** A run that failed on an error: Letta's error type when more precise than its stop reason's. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  error_type?: string | null;

  /** Calls parked for consent; cleared when a continuation run claims them. */
  @JsonColumn({ nullable: true })
  parked!: ParkedCall[] | null;

  /** The run that continued this parked one. */
  @Column({ type: 'varchar', nullable: true })
  continued_by!: string | null;

  /** Letta's request dedupe: a digest of the request messages' otids (all of them carried one). */
  @Column({ type: 'varchar', length: 64, nullable: true })
  request_key?: string | null;

  /** The last attempt at `input.callback_url`, once one was made (or why none will be). */
  @JsonColumn({ nullable: true })
  callback?: RunCallback | null;

  @EpochMsColumn()
  created_at!: number;

  @EpochMsColumn({ nullable: true })
  started_at!: number | null;

  @EpochMsColumn({ nullable: true })
  completed_at!: number | null;

  /**
   * Letta's `ttft_ns`: from `started_at` to the first chunk of the run's first model answer (the CLOCK's
   * ms, in ns), stored with the run's end; null when it made no model call, and on rows older than it.
   */
  @BigIntColumn({ nullable: true })
  ttft_ns?: number | null;
}
