import { validationFailed, type ValidationProblem } from '../common/domain-error';
import { BUDGET_FIELD_NAMES, BudgetFields, parseBudgetValue } from '../core/loop/budgets';
import type { InBandApproval } from './processing.ports';

/** A validated `POST /v1/agents/{id}/messages` body. */
export interface SendMessageRequest {
  messages: { role: 'user' | 'system'; content: string }[];
  approvals: InBandApproval[] | null;
  /** Legacy single approval: `{type:'approval', approval_request_id, approve, reason}`. */
  approvalRequestId: string | null;
  maxSteps: number | null;
  /** Our extension: budgets for this request, over the agent's (only the ones given). */
  budgets: Partial<BudgetFields>;
  streaming: boolean;
  /** Letta's token streaming: assistant text in several frames sharing the message id (streaming only). */
  streamTokens: boolean;
  includePings: boolean;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function textOf(content: unknown, path: string, problems: ValidationProblem[]): string | null {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const parts: string[] = [];
    content.forEach((p, i) => {
      if (isObj(p) && p.type === 'text' && typeof p.text === 'string') parts.push(p.text);
      else problems.push({ path: `${path}[${i}]`, message: 'must be {type: "text", text}' });
    });
    return parts.join('');
  }
  problems.push({ path, message: 'must be a string or an array of text parts' });
  return null;
}

function parseGrant(v: unknown, path: string, problems: ValidationProblem[]) {
  if (v == null) return null;
  if (!isObj(v) || typeof v.decision !== 'string') {
    problems.push({ path, message: 'must be {decision, seconds?, constraint?}' });
    return null;
  }
  if (v.seconds !== undefined && (typeof v.seconds !== 'number' || !(v.seconds > 0))) {
    problems.push({ path: `${path}.seconds`, message: 'must be a positive number' });
  }
  return {
    decision: v.decision,
    ...(typeof v.seconds === 'number' ? { seconds: v.seconds } : {}),
    ...(v.constraint !== undefined ? { constraint: v.constraint } : {}),
  };
}

export function parseSendMessage(body: unknown, opts: { streamPath: boolean }): SendMessageRequest {
  const problems: ValidationProblem[] = [];
  if (!isObj(body)) throw validationFailed([{ path: '', message: 'body must be a JSON object' }]);
  const out: SendMessageRequest = {
    messages: [],
    approvals: null,
    approvalRequestId: null,
    maxSteps: null,
    budgets: {},
    streaming: opts.streamPath || body.streaming === true,
    streamTokens: false,
    includePings: body.include_pings !== false,
  };
  out.streamTokens = out.streaming && body.stream_tokens === true;
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    problems.push({ path: 'messages', message: 'must be a non-empty array' });
  } else {
    body.messages.forEach((m: unknown, i) => {
      const path = `messages[${i}]`;
      if (!isObj(m)) return problems.push({ path, message: 'must be an object' });
      if (m.type === 'approval') {
        if (out.approvals)
          return problems.push({ path, message: 'only one approval item allowed' });
        if (Array.isArray(m.approvals)) {
          out.approvals = m.approvals.map((a: unknown, j) => {
            const p = `${path}.approvals[${j}]`;
            if (!isObj(a) || typeof a.tool_call_id !== 'string' || typeof a.approve !== 'boolean') {
              problems.push({
                path: p,
                message: 'must be {type: "approval", tool_call_id, approve}',
              });
              return { tool_call_id: '', approve: false };
            }
            return {
              tool_call_id: a.tool_call_id,
              approve: a.approve,
              reason: typeof a.reason === 'string' ? a.reason : null,
              grant: parseGrant(a.grant, `${p}.grant`, problems),
            };
          });
          if (out.approvals.length === 0) problems.push({ path, message: 'approvals is empty' });
        } else if (typeof m.approve === 'boolean') {
          out.approvalRequestId =
            typeof m.approval_request_id === 'string' ? m.approval_request_id : null;
          out.approvals = [
            {
              tool_call_id: '', // filled from the pending request
              approve: m.approve,
              reason: typeof m.reason === 'string' ? m.reason : null,
              grant: parseGrant(m.grant, `${path}.grant`, problems),
            },
          ];
        } else {
          problems.push({ path, message: 'an approval needs approvals[] or approve' });
        }
        return;
      }
      const role = m.role ?? 'user';
      if (role !== 'user' && role !== 'system') {
        return problems.push({ path: `${path}.role`, message: 'must be "user" or "system"' });
      }
      const text = textOf(m.content, `${path}.content`, problems);
      if (text !== null) out.messages.push({ role, content: text });
    });
  }
  if (body.max_steps !== undefined && body.max_steps !== null) {
    const n = body.max_steps;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 10000) {
      problems.push({ path: 'max_steps', message: 'must be a whole number from 1 to 10000' });
    } else out.maxSteps = n;
  }
  const bad = (path: string, message: string) => problems.push({ path, message });
  for (const k of BUDGET_FIELD_NAMES) {
    const v = parseBudgetValue(k, body[k], k, bad);
    if (v !== null) out.budgets[k] = v;
  }
  if (problems.length) throw validationFailed(problems);
  return out;
}
