import type { MessageEntity } from './entities/message.entity';
import type { RunEntity, RunUsage } from './entities/run.entity';
import type { StepEntity } from './entities/step.entity';

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
  return out;
}

export const EMPTY_USAGE: RunUsage = {
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  step_count: 0,
};

export function toLettaUsage(u: RunUsage | null) {
  const usage = u ?? EMPTY_USAGE;
  return {
    message_type: 'usage_statistics' as const,
    completion_tokens: usage.completion_tokens,
    prompt_tokens: usage.prompt_tokens,
    total_tokens: usage.total_tokens,
    step_count: usage.step_count,
  };
}

export function toLettaRun(r: RunEntity) {
  return {
    id: r.id,
    agent_id: r.agent_id,
    status: r.status,
    stop_reason: r.stop_reason,
    background: r.input.mode === 'async',
    batch_id: r.batch_id,
    created_at: iso(r.created_at),
    started_at: iso(r.started_at),
    completed_at: iso(r.completed_at),
    usage: toLettaUsage(r.usage),
    metadata: r.error ? { error: r.error } : null,
    error: r.error,
    continued_by: r.continued_by,
    resumes_run_id: r.input.resumes_run_id ?? null,
    total_duration_ns:
      r.completed_at != null && r.started_at != null ? (r.completed_at - r.started_at) * 1e6 : null,
    request_config: { max_steps: r.input.max_steps ?? null, ...r.input.budgets },
  };
}

export function toLettaStep(s: StepEntity) {
  return {
    id: s.id,
    run_id: s.run_id,
    agent_id: s.agent_id,
    batch_id: s.batch_id,
    step_number: s.step_number,
    model: s.model,
    prompt_tokens: s.usage.prompt_tokens,
    completion_tokens: s.usage.completion_tokens,
    total_tokens: s.usage.total_tokens,
    stop_reason: s.finish_reason,
    status: 'success',
    created_at: iso(s.created_at),
  };
}
