import { validationFailed, type ValidationProblem } from '../common/domain-error';
import { readPageQuery, type PageQuery } from '../common/list-page';
import { countProblem, readInstant, type InputLimits } from '../core/limits';
import type { RunStatus } from '../core/loop/stop-reason';
import type { StepFeedback } from './entities/step.entity';
import type { LettaView } from './message.mapper';
import type { RunStreamOptions } from './run-stream';
import { parseView } from './send-message.dto';

export interface HistoryQuery extends PageQuery {
  /** A conversation's history; absent or null: the agent's default conversation. */
  conversationId?: string | null;
  /**
   * `before` means older in either order, as Letta's conversation endpoint reads it (Letta Code pages back
   * with `order=desc&before=<oldest id>`); otherwise it is relative to the order, as `after` always is.
   */
  beforeIsOlder?: boolean;
}

export interface RunsQuery extends HistoryQuery {
  /** `agent_id` and Letta's older `agent_ids`: the runs (steps) of any of them. */
  agentIds?: string[];
  statuses?: RunStatus[];
  /** Runs of one conversation; null: of the agents' default conversations. */
  inConversation?: string | null;
  stopReason?: string;
}

const STATUSES: RunStatus[] = ['created', 'running', 'completed', 'failed', 'cancelled'];

type PageLimits = Pick<InputLimits, 'max_page_size' | 'max_page_bytes' | 'max_filter_values'>;

/**
 * `GET /v1/agents/{id}/messages?limit&before&after&order&conversation_id&use_assistant_message&include_return_message_types`.
 */
export function parseHistoryQuery(
  q: Record<string, unknown>,
  limits: PageLimits,
): HistoryQuery & { view: LettaView } {
  const problems: ValidationProblem[] = [];
  const out: HistoryQuery & { view: LettaView } = {
    ...readPageQuery(q, problems, 100, limits),
    view: parseView(q, problems),
  };
  const conversation = q.conversation_id;
  if (conversation !== undefined && conversation !== '') {
    // one of the agent's conversations (another's id finds none of its messages); `default`: its own
    if (typeof conversation !== 'string' || conversation.length > 200)
      problems.push({ path: 'conversation_id', message: 'must be a conversation id' });
    else if (conversation !== 'default') out.conversationId = conversation;
  }
  if (problems.length) throw validationFailed(problems, 'query is invalid');
  return out;
}

/**
 * `GET /v1/runs/?agent_id&agent_ids&statuses&stop_reason&conversation_id&limit&before&after&order`
 * (Letta's older `ascending` when `order` is not given; `conversation_id=default`: the default ones).
 */
export function parseRunsQuery(q: Record<string, unknown>, limits: PageLimits): RunsQuery {
  const problems: ValidationProblem[] = [];
  const out: RunsQuery = readPageQuery(q, problems, 100, limits);
  if (q.order === undefined && (q.ascending === 'true' || q.ascending === 'false'))
    out.order = q.ascending === 'true' ? 'asc' : 'desc';
  const ids = [q.agent_id, q.agent_ids].flat().filter((v) => v !== undefined && v !== '');
  if (ids.some((v) => typeof v !== 'string' || v.length > 200))
    problems.push({ path: 'agent_id', message: 'must be agent ids' });
  else {
    const tooMany = countProblem('agent_ids', ids.length, 'max_filter_values', limits);
    if (tooMany) problems.push(tooMany);
    else if (ids.length) out.agentIds = [...new Set(ids as string[])];
  }
  for (const [key, max] of [
    ['conversation_id', 200],
    ['stop_reason', 64],
  ] as const) {
    const v = q[key];
    if (v === undefined || v === '') continue;
    if (typeof v !== 'string' || v.length > max)
      problems.push({ path: key, message: `must be a text of at most ${max} characters` });
    else if (key === 'stop_reason') out.stopReason = v;
    else out.inConversation = v === 'default' ? null : v;
  }
  const st = q.statuses ?? q.status;
  if (st !== undefined) {
    const raw: unknown[] = Array.isArray(st) ? st : typeof st === 'string' ? st.split(',') : [st];
    const list = raw.map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
    const bad = list.filter((s) => !STATUSES.includes(s as RunStatus));
    if (bad.length) {
      problems.push({ path: 'statuses', message: `must be among ${STATUSES.join(', ')}` });
    } else out.statuses = [...new Set(list)] as RunStatus[]; // at most five SQL variables
  }
  if (q.active === 'true') out.statuses = ['created', 'running'];
  if (problems.length) throw validationFailed(problems, 'query is invalid');
  return out;
}

export interface StepsQuery extends RunsQuery {
  feedback?: StepFeedback;
  hasFeedback?: boolean;
  model?: string;
  /** Created strictly after / before (epoch ms), as Letta's `start_date` / `end_date`. */
  startMs?: number;
  endMs?: number;
  /** `trace_ids` or `project_id` given: no step here has either, so nothing matches. */
  matchesNone?: boolean;
}

export const STEP_FEEDBACK: StepFeedback[] = ['positive', 'negative'];
const MODEL_MAX = 200;

/**
 * `GET /v1/steps/`: the runs query (agent_id, cursors, order) and Letta's filters `feedback`,
 * `has_feedback`, `model`, `start_date`, `end_date`, `trace_ids`, `project_id` (`tags` is accepted and not
 * read, as Letta's server does not read it).
 */
export function parseStepsQuery(q: Record<string, unknown>, limits: PageLimits): StepsQuery {
  const out: StepsQuery = parseRunsQuery(q, limits);
  const problems: ValidationProblem[] = [];
  if (q.feedback !== undefined && q.feedback !== '') {
    if (!STEP_FEEDBACK.includes(q.feedback as StepFeedback))
      problems.push({ path: 'feedback', message: 'must be positive or negative' });
    else out.feedback = q.feedback as StepFeedback;
  }
  if (q.has_feedback !== undefined && q.has_feedback !== '') {
    if (q.has_feedback !== 'true' && q.has_feedback !== 'false')
      problems.push({ path: 'has_feedback', message: 'must be true or false' });
    else out.hasFeedback = q.has_feedback === 'true';
  }
  if (q.model !== undefined && q.model !== '') {
    if (typeof q.model !== 'string' || q.model.length > MODEL_MAX)
      problems.push({
        path: 'model',
        message: `must be a model name of at most ${MODEL_MAX} characters`,
      });
    else out.model = q.model;
  }
  const start = readInstant(q.start_date, 'start_date', problems);
  const end = readInstant(q.end_date, 'end_date', problems);
  if (start !== null && end !== null && start > end)
    problems.push({ path: 'start_date', message: 'must be earlier than or equal to end_date' });
  if (start !== null) out.startMs = start;
  if (end !== null) out.endMs = end;
  const given = (v: unknown) =>
    v !== undefined && v !== '' && !(Array.isArray(v) && v.length === 0);
  if (given(q.trace_ids) || given(q.project_id)) out.matchesNone = true;
  if (problems.length) throw validationFailed(problems, 'query is invalid');
  return out;
}

/** `POST /v1/agents/{id}/messages/cancel` body: optional `{run_ids: [...]}`, at most `max_filter_values`. */
export function parseCancel(
  body: unknown,
  limits: Pick<InputLimits, 'max_filter_values'>,
): string[] | null {
  if (body === undefined || body === null) return null;
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw validationFailed([{ path: '', message: 'body must be a JSON object' }]);
  }
  const ids = (body as Record<string, unknown>).run_ids;
  if (ids === undefined || ids === null) return null;
  if (!Array.isArray(ids) || ids.some((i) => typeof i !== 'string' || i.length > 200)) {
    throw validationFailed([{ path: 'run_ids', message: 'must be an array of run ids' }]);
  }
  const tooMany = countProblem('run_ids', ids.length, 'max_filter_values', limits);
  if (tooMany) throw validationFailed([tooMany]);
  return [...new Set(ids as string[])];
}

/** `use_assistant_message` and `include_return_message_types` of a query (e.g. a run's messages). */
export function parseViewQuery(q: Record<string, unknown>): LettaView {
  const problems: ValidationProblem[] = [];
  const view = parseView(q, problems);
  if (problems.length) throw validationFailed(problems, 'query is invalid');
  return view;
}

/** `POST /v1/runs/{id}/stream` body: `{starting_after?, include_pings?, include_progress?}` (Letta's polling knobs ignored). */
export function parseResumeStream(
  body: unknown,
): RunStreamOptions & { startingAfter: number | null } {
  const b = (
    typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}
  ) as Record<string, unknown>;
  const problems: ValidationProblem[] = [];
  let startingAfter: number | null = null;
  if (b.starting_after !== undefined && b.starting_after !== null) {
    const n = b.starting_after;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
      problems.push({ path: 'starting_after', message: 'must be a whole number (a seq_id)' });
    } else startingAfter = n;
  }
  const view = parseView(b, problems);
  if (problems.length) throw validationFailed(problems);
  return {
    startingAfter,
    includePings: b.include_pings !== false,
    includeProgress: b.include_progress === true,
    view,
  };
}
