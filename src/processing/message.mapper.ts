import type { ModelUsage } from '../models/model-provider';
import type { MessageEntity } from './entities/message.entity';
import type { RunEntity, RunUsage } from './entities/run.entity';
import type { StepEntity } from './entities/step.entity';
import { runMetadata } from './run-error';

export type LettaMessage = Record<string, unknown> & { id: string; message_type: string };

const iso = (ms: number | null) => (ms == null ? null : new Date(ms).toISOString());

/**
 * A stored message as Letta returns it; payload keys starting with `_` are internal and left out. A
 * token-streaming chunk is not stored yet: no seq_id.
 */
export function toLettaMessage(
  m: Omit<MessageEntity, 'seq_id'> & { seq_id: number | null },
): LettaMessage {
  const out: LettaMessage = {
    id: m.id,
    date: iso(m.created_at),
    message_type: m.message_type,
    run_id: m.run_id,
    step_id: m.step_id,
    seq_id: m.seq_id,
    otid: null,
    sender_id: null,
    name: null,
  };
  for (const [k, v] of Object.entries(m.payload)) if (!k.startsWith('_')) out[k] = v;
  // clients that read a tool call's name from `name` (the Vercel AI SDK provider) find it there too
  if (m.message_type === 'tool_call_message') out.name = toolCallName(m.payload);
  return out;
}

/** The name of the tool messages Letta shows as `assistant_message` (its `assistant_message_tool_name`). */
export const SEND_MESSAGE_TOOL = 'send_message';

/** How Letta's clients want messages shown: `use_assistant_message` and `include_return_message_types`. */
export interface LettaView {
  /** Letta's default: a send_message call is one assistant_message (its call and return are hidden). */
  useAssistantMessage: boolean;
  /** Only these message types (null: every type). */
  types: readonly string[] | null;
}

export const DEFAULT_VIEW: LettaView = { useAssistantMessage: true, types: null };

/**
 * How a stored message is presented: `assistant` / `tool` (the two presentations of a send_message call:
 * its text as an assistant_message, shown with use_assistant_message, or its call and return, shown
 * without), `hidden` (a call held back until its outcome was known: never shown; see `_held`), or null
 * (every other message, always shown).
 */
export type MessageForm = 'assistant' | 'tool' | 'hidden' | null;

export function sendMessageForm(m: {
  message_type: string;
  payload: Record<string, unknown>;
}): MessageForm {
  if (m.payload._held) return 'hidden';
  if (m.message_type === 'assistant_message') return m.payload._derived ? 'assistant' : null;
  if (m.message_type === 'tool_call_message') {
    return toolCallName(m.payload) === SEND_MESSAGE_TOOL ? 'tool' : null;
  }
  if (m.message_type === 'tool_return_message') {
    return m.payload.name === SEND_MESSAGE_TOOL ? 'tool' : null;
  }
  return null;
}

/** Whether a message of this type and form is shown in the view. */
export function shownIn(view: LettaView, messageType: string, form: MessageForm): boolean {
  if (form === 'hidden') return false;
  if (form === 'assistant' && !view.useAssistantMessage) return false;
  if (form === 'tool' && view.useAssistantMessage) return false;
  return view.types === null || view.types.includes(messageType);
}

/** The stored messages the view shows, as Letta returns them. */
export function toLettaMessages(rows: MessageEntity[], view: LettaView): LettaMessage[] {
  return rows.filter((m) => shownIn(view, m.message_type, sendMessageForm(m))).map(toLettaMessage);
}

/**
 * A stored message in its Letta form with its send_message form, mapped once: a run publishes it and
 * answers with it (nobody may change it afterwards).
 */
export interface MappedMessage {
  letta: LettaMessage;
  form: MessageForm;
}

export function mapMessage(m: MessageEntity): MappedMessage {
  return { letta: toLettaMessage(m), form: sendMessageForm(m) };
}

/**
 * Whether a message a run wrote is in its response and stream. Letta answers neither the user messages
 * a run writes (heartbeats, rule reminders) nor the approval response (letta/agents/helpers.py); history
 * keeps them.
 */
export function inRunResponse(messageType: string): boolean {
  return messageType !== 'user_message' && messageType !== 'approval_response_message';
}

/** The mapped messages of a run's response the view shows. */
export function shownMessages(mapped: MappedMessage[], view: LettaView): LettaMessage[] {
  const out: LettaMessage[] = [];
  for (const m of mapped)
    if (inRunResponse(m.letta.message_type) && shownIn(view, m.letta.message_type, m.form))
      out.push(m.letta);
  return out;
}

function toolCallName(payload: Record<string, unknown>): string | null {
  const call = payload.tool_call as { name?: unknown } | undefined;
  return typeof call?.name === 'string' ? call.name : null;
}

export const EMPTY_USAGE: RunUsage = {
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  step_count: 0,
};

/**
 * Adds a model call's tokens to a run's. The cached and reasoning counts add up over the calls whose
 * endpoint reported them, as Letta sums its usage: null (absent) until one did, 0 when it reported none.
 */
export function addModelUsage(total: RunUsage, u: Partial<ModelUsage> | null | undefined): void {
  total.prompt_tokens += u?.prompt_tokens ?? 0;
  total.completion_tokens += u?.completion_tokens ?? 0;
  total.total_tokens += u?.total_tokens ?? 0;
  if (u?.cached_input_tokens !== undefined)
    total.cached_input_tokens = (total.cached_input_tokens ?? 0) + u.cached_input_tokens;
  if (u?.reasoning_tokens !== undefined)
    total.reasoning_tokens = (total.reasoning_tokens ?? 0) + u.reasoning_tokens;
}

/** Letta's LettaUsageStatistics (a response's `usage`, the stream's usage frame). */
export function toLettaUsage(u: RunUsage | null) {
  const usage = u ?? EMPTY_USAGE;
  return {
    message_type: 'usage_statistics' as const,
    completion_tokens: usage.completion_tokens,
    prompt_tokens: usage.prompt_tokens,
    total_tokens: usage.total_tokens,
    step_count: usage.step_count,
    cached_input_tokens: usage.cached_input_tokens ?? null,
    // Anthropic's cache writes: an OpenAI-compatible endpoint reports none (nor does Letta read one there)
    cache_write_tokens: null,
    reasoning_tokens: usage.reasoning_tokens ?? null,
  };
}

/**
 * A run's usage as Letta's `GET /v1/runs/{id}/usage` types it (UsageStatistics): the cached and reasoning
 * tokens in OpenAI's details, as Letta's `to_usage` shapes them (null: not reported); our step_count too.
 */
export function toLettaRunUsage(u: RunUsage | null) {
  const usage = u ?? EMPTY_USAGE;
  return {
    completion_tokens: usage.completion_tokens,
    prompt_tokens: usage.prompt_tokens,
    total_tokens: usage.total_tokens,
    step_count: usage.step_count,
    prompt_tokens_details:
      usage.cached_input_tokens === undefined
        ? null
        : {
            cached_tokens: usage.cached_input_tokens,
            cache_read_tokens: null,
            cache_creation_tokens: null,
          },
    completion_tokens_details:
      usage.reasoning_tokens === undefined ? null : { reasoning_tokens: usage.reasoning_tokens },
  };
}

export function toLettaRun(r: RunEntity) {
  return {
    id: r.id,
    agent_id: r.agent_id,
    // Letta's: the conversation the run was sent to; null for the agent's own (default) history
    conversation_id: r.conversation_id,
    status: r.status,
    stop_reason: r.stop_reason,
    // async runs always are (as Letta's); a stream is when its request said so
    background: r.input.mode === 'async' || r.input.background === true,
    batch_id: r.batch_id,
    created_at: iso(r.created_at),
    started_at: iso(r.started_at),
    completed_at: iso(r.completed_at),
    usage: toLettaUsage(r.usage),
    metadata: runMetadata(r),
    error: r.error,
    continued_by: r.continued_by,
    resumes_run_id: r.input.resumes_run_id ?? null,
    total_duration_ns:
      r.completed_at != null && r.started_at != null ? (r.completed_at - r.started_at) * 1e6 : null,
    // Letta's LettaRequestConfig (this server shows send_message's `message` only), then our
    // max_steps and budgets
    request_config: {
      use_assistant_message: r.input.use_assistant_message ?? true,
      assistant_message_tool_name: SEND_MESSAGE_TOOL,
      assistant_message_tool_kwarg: 'message',
      include_return_message_types: r.input.include_return_message_types ?? null,
      max_steps: r.input.max_steps ?? null,
      ...r.input.budgets,
    },
    callback_url: r.input.callback_url ?? null,
    callback_sent_at: iso(r.callback?.sent_at ?? null),
    callback_status_code: r.callback?.status_code ?? null,
    callback_error: r.callback?.error ?? null,
    ttft_ns: r.ttft_ns ?? null,
    // Letta Cloud's templates
    base_template_id: null,
  };
}

/**
 * What a run's `callback_url` is POSTed once it ended: Letta's callback body `{job_id, status,
 * completed_at, metadata}` (Letta 0.x named runs jobs), with `run_id`, `agent_id` and `stop_reason`.
 */
export function toCallbackBody(
  r: Pick<RunEntity, 'id' | 'agent_id' | 'status' | 'stop_reason' | 'completed_at' | 'error'> & {
    error_type?: string | null;
  },
): string {
  return JSON.stringify({
    job_id: r.id,
    run_id: r.id,
    agent_id: r.agent_id,
    status: r.status,
    stop_reason: r.stop_reason,
    completed_at: iso(r.completed_at),
    metadata: runMetadata(r) ?? {},
  });
}

/**
 * A step's model finish reason as Letta's StopReasonType: the model ended its turn, or ran out of output
 * tokens; null where it called tools (what followed is the run's stop reason, not the step's).
 */
function stepStopReason(finish: string | null): string | null {
  if (finish === 'stop') return 'end_turn';
  if (finish === 'length') return 'max_tokens_exceeded';
  return null;
}

export function toLettaStep(s: StepEntity) {
  return {
    id: s.id,
    run_id: s.run_id,
    agent_id: s.agent_id,
    batch_id: s.batch_id,
    step_number: s.step_number,
    model: s.model,
    model_handle: s.model_handle ?? null,
    model_endpoint: s.model_endpoint ?? null,
    context_window_limit: s.context_window_limit ?? null,
    // the handle's first part, as Letta's provider_name is its handle's
    provider_name: s.model_handle ? s.model_handle.split('/', 1)[0] : null,
    prompt_tokens: s.usage.prompt_tokens,
    completion_tokens: s.usage.completion_tokens,
    total_tokens: s.usage.total_tokens,
    ...stepTokenDetails(s.usage),
    stop_reason: stepStopReason(s.finish_reason),
    // a step is stored once its model call answered
    status: 'success',
    feedback: s.feedback,
    tags: s.tags ?? [],
    // Letta's (deprecated) step messages: its server loads none either (GET /v1/steps/{id}/messages)
    messages: [],
    // not recorded per step: traces, errors (a step is stored once its model call answered), Letta
    // Cloud's projects and request log
    ...NULL_STEP_FIELDS,
    created_at: iso(s.created_at),
  };
}

const NULL_STEP_FIELDS = {
  origin: null,
  provider_id: null,
  provider_category: null,
  tid: null,
  trace_id: null,
  request_id: null,
  project_id: null,
  error_type: null,
  error_data: null,
} as const;

/**
 * A step's cached and reasoning tokens as Letta stores an OpenAI-compatible answer's: the details as
 * reported (its prompt details give the cached count as both `cached_tokens` and `cache_read_tokens`), the
 * flat counts only above 0; null where the endpoint reported none. No cache writes: Anthropic's.
 */
function stepTokenDetails(u: Partial<ModelUsage>) {
  const cached = u.cached_input_tokens;
  const reasoning = u.reasoning_tokens;
  return {
    cached_input_tokens: cached ? cached : null,
    cache_write_tokens: null,
    reasoning_tokens: reasoning ? reasoning : null,
    prompt_tokens_details:
      cached === undefined
        ? null
        : { cached_tokens: cached, cache_read_tokens: cached, cache_creation_tokens: null },
    completion_tokens_details: reasoning === undefined ? null : { reasoning_tokens: reasoning },
  };
}

/**
 * Letta's StepMetrics from what a step records: the model call's start and duration. The step's own
 * span and its tools' time are not recorded (null), nor projects, templates or provider ids.
 */
export function toLettaStepMetrics(s: StepEntity) {
  return {
    id: s.id,
    agent_id: s.agent_id,
    run_id: s.run_id,
    provider_id: null,
    project_id: null,
    template_id: null,
    base_template_id: null,
    step_start_ns: null,
    step_ns: null,
    llm_request_start_ns: s.model_call_started_at == null ? null : s.model_call_started_at * 1e6,
    llm_request_ns: s.model_call_ns,
    tool_execution_ns: null,
  };
}
