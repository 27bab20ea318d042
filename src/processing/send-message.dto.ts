import type { AppConfig } from '../config/app-config';
import { validationFailed, type ValidationProblem } from '../common/domain-error';
import { CLIENT_TOOL_NAME } from '../core/agents/validate-agent';
import type { InputLimits } from '../core/limits';
import { BUDGET_FIELD_NAMES, BudgetFields, parseBudgetValue } from '../core/loop/budgets';
import { ImageLimits, parseContent } from '../core/loop/content-parts';
import { MessageCreate, parseMessageCreate } from '../core/loop/message-create';
import { ConstraintCompiler } from '../core/permissions/constraint';
import { validateDecisionInput } from '../core/permissions/consent-decision';
import { SEND_MESSAGE_TOOL, type LettaView } from './message.mapper';
import type { ClientToolSpec } from './entities/run.entity';
import type { InBandApproval } from './processing.ports';

/** A validated `POST /v1/agents/{id}/messages` body. */
export interface SendMessageRequest {
  /** `otid`: the client's own id of the message (Letta's offline id), stored and answered with it. */
  /** `assistant`: Letta's MessageCreate allows it; it joins the context as the agent's own words. */
  messages: MessageCreate[];
  approvals: InBandApproval[] | null;
  /**
   * Letta's legacy single approval `{type:'approval', approval_request_id?, approve, reason?}`: one answer for
   * the pending approval request; its id is the approval_request_message's (null: whatever is pending).
   */
  legacyApproval: { approvalRequestId: string | null } | null;
  maxSteps: number | null;
  /** Our extension: budgets for this request, over the agent's (only the ones given). */
  budgets: Partial<BudgetFields>;
  streaming: boolean;
  /** Letta's token streaming: assistant text in several frames sharing the message id (streaming only). */
  streamTokens: boolean;
  /** Letta's `background` (streaming only): recorded and answered on the run; every stream is resumable. */
  background: boolean;
  includePings: boolean;
  /** Our extension (`include_progress: true`): progress frames on the stream, which Letta's union lacks. */
  includeProgress: boolean;
  /** `use_assistant_message` and `include_return_message_types`. */
  view: LettaView;
  /** Letta's `client_tools`: offered to the model under the agent's rules, run by the client. */
  clientTools: ClientToolSpec[];
  /** The conversation (from the route; null: the agent's default one). */
  conversationId: string | null;
  /** Letta's `callback_url`: POSTed the run's outcome once it ends (the outbound host policy applies). */
  callbackUrl: string | null;
  /** Letta's `override_model`: a model handle answering this request instead of the agent's model. */
  overrideModel: string | null;
}

/** Bounds of a request's inputs (from the `processing` config). */
export interface SendMessageLimits {
  maxClientTools: number;
  maxClientToolBytes: number;
  /** A grant's `seconds` (limits.max_duration_seconds). */
  grants: Pick<InputLimits, 'max_duration_seconds'>;
  images: ImageLimits;
  /** `callback_url`'s length (webhooks.url_max_length, as a webhook's target URL). */
  maxUrlLength: number;
}

export const sendMessageLimits = (config: AppConfig): SendMessageLimits => ({
  maxClientTools: config.processing.max_client_tools,
  maxClientToolBytes: config.processing.max_client_tool_bytes,
  grants: config.limits,
  images: {
    maxImages: config.processing.max_images_per_message,
    maxImageBytes: config.processing.max_image_bytes,
  },
  maxUrlLength: config.webhooks.url_max_length,
});

/** A model handle's length (a provider's name and its model's, as `models.list` answers them). */
const MAX_MODEL_HANDLE = 400;

/** In-band grants are checked here, before anything is stored: the decision must not fail after a 200. */
const grantConstraints = new ConstraintCompiler(100);

function parseClientTools(
  v: unknown,
  limits: SendMessageLimits,
  problems: ValidationProblem[],
): ClientToolSpec[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > limits.maxClientTools) {
    problems.push({
      path: 'client_tools',
      message: `must be an array of at most ${limits.maxClientTools} tools`,
    });
    return [];
  }
  const out: ClientToolSpec[] = [];
  v.forEach((t: unknown, i) => {
    const path = `client_tools[${i}]`;
    if (!isObj(t) || typeof t.name !== 'string' || !CLIENT_TOOL_NAME.test(t.name)) {
      return problems.push({
        path,
        message: 'must be {name (letters, digits, _ or -, at most 64), description?, parameters?}',
      });
    }
    if (JSON.stringify(t).length > limits.maxClientToolBytes) {
      return problems.push({
        path,
        message: `is larger than ${limits.maxClientToolBytes} bytes as JSON`,
      });
    }
    if (t.parameters !== undefined && t.parameters !== null && !isObj(t.parameters)) {
      return problems.push({ path: `${path}.parameters`, message: 'must be a JSON Schema object' });
    }
    if (out.some((o) => o.name === t.name)) {
      return problems.push({ path: `${path}.name`, message: `${t.name} is declared twice` });
    }
    out.push({
      name: t.name,
      description: typeof t.description === 'string' ? t.description : '',
      parameters: isObj(t.parameters) ? t.parameters : { type: 'object', properties: {} },
    });
  });
  return out;
}

/** One answer of an approval item: Letta's `ApprovalReturn` (a decision) or `ToolReturn` (a client tool's result). */
function parseAnswer(
  a: unknown,
  p: string,
  limits: SendMessageLimits,
  problems: ValidationProblem[],
): InBandApproval {
  if (isObj(a) && a.type === 'tool') {
    if (typeof a.tool_call_id !== 'string' || a.tool_call_id === '') {
      problems.push({ path: `${p}.tool_call_id`, message: 'must be the id of the pending call' });
    }
    if (a.status !== 'success' && a.status !== 'error') {
      problems.push({ path: `${p}.status`, message: 'must be "success" or "error"' });
    }
    const ret = a.tool_return;
    const text = typeof ret === 'string' ? ret : textOf(ret, `${p}.tool_return`, problems);
    return {
      tool_call_id: typeof a.tool_call_id === 'string' ? a.tool_call_id : '',
      approve: true,
      reason: null,
      tool_return: text ?? '',
      status: a.status === 'error' ? 'error' : 'success',
    };
  }
  if (
    !isObj(a) ||
    typeof a.tool_call_id !== 'string' ||
    a.tool_call_id === '' || // never "whatever is pending": that is the legacy form's job
    typeof a.approve !== 'boolean'
  ) {
    problems.push({
      path: p,
      message:
        'must be {type: "approval", tool_call_id, approve} or {type: "tool", tool_call_id, tool_return, status}, with a non-empty tool_call_id',
    });
    return { tool_call_id: '', approve: false };
  }
  return {
    tool_call_id: a.tool_call_id,
    approve: a.approve,
    reason: typeof a.reason === 'string' ? a.reason : null,
    grant: parseGrant(a.grant, `${p}.grant`, limits, problems),
  };
}

/**
 * Every value of Letta's MessageType, which `include_return_message_types` may name: Letta's clients send
 * types this server never produces (hidden_reasoning_message, summary_message, event_message); they
 * match nothing.
 */
export const MESSAGE_TYPES: readonly string[] = [
  'system_message',
  'user_message',
  'assistant_message',
  'reasoning_message',
  'hidden_reasoning_message',
  'tool_call_message',
  'tool_return_message',
  'approval_request_message',
  'approval_response_message',
  'summary_message',
  'event_message',
];

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A tool return's text: a string or text parts. */
/**
 * A client tool's return as the text the model reads. Letta's `ToolReturn` may hold image parts (Letta
 * Code's Read of a picture): a tool message carries text only, so each image is named in its place.
 */
function textOf(content: unknown, path: string, problems: ValidationProblem[]): string | null {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const parts: string[] = [];
    content.forEach((p, i) => {
      if (isObj(p) && p.type === 'text' && typeof p.text === 'string') parts.push(p.text);
      else if (isObj(p) && p.type === 'image') {
        const source = isObj(p.source) ? p.source : {};
        const type =
          typeof source.media_type === 'string' ? source.media_type.slice(0, 100) : 'image';
        parts.push(`[${type} returned by the tool; not shown: a tool result is text]`);
      } else
        problems.push({
          path: `${path}[${i}]`,
          message: 'must be {type: "text", text} or {type: "image", source}',
        });
    });
    return parts.join('');
  }
  problems.push({ path, message: 'must be a string or an array of text or image parts' });
  return null;
}

function parseGrant(
  v: unknown,
  path: string,
  limits: SendMessageLimits,
  problems: ValidationProblem[],
) {
  if (v == null) return null;
  if (!isObj(v) || typeof v.decision !== 'string') {
    problems.push({ path, message: 'must be {decision, seconds?, constraint?}' });
    return null;
  }
  const checked = validateDecisionInput(
    { decision: v.decision, seconds: v.seconds, constraint: v.constraint },
    grantConstraints,
    limits.grants,
  );
  if (!checked.ok)
    problems.push(...checked.problems.map((p) => ({ ...p, path: `${path}.${p.path}` })));
  return {
    decision: v.decision,
    ...(typeof v.seconds === 'number' ? { seconds: v.seconds } : {}),
    ...(v.constraint !== undefined ? { constraint: v.constraint } : {}),
  };
}

/** `use_assistant_message` (default true) and `include_return_message_types` of a body or query. */
export function parseView(q: Obj, problems: ValidationProblem[]): LettaView {
  const view: LettaView = { useAssistantMessage: true, types: null };
  const use = q.use_assistant_message;
  if (use === false || use === 'false') view.useAssistantMessage = false;
  else if (use !== undefined && use !== null && use !== true && use !== 'true') {
    problems.push({ path: 'use_assistant_message', message: 'must be a boolean' });
  }
  const tool = q.assistant_message_tool_name;
  if (tool !== undefined && tool !== null && tool !== SEND_MESSAGE_TOOL) {
    problems.push({
      path: 'assistant_message_tool_name',
      message: `only "${SEND_MESSAGE_TOOL}" is supported`,
    });
  }
  const kwarg = q.assistant_message_tool_kwarg;
  if (kwarg !== undefined && kwarg !== null && kwarg !== 'message') {
    problems.push({ path: 'assistant_message_tool_kwarg', message: 'only "message" is supported' });
  }
  const types = q.include_return_message_types;
  if (types !== undefined && types !== null) {
    const list: unknown[] = Array.isArray(types)
      ? types
      : typeof types === 'string'
        ? types.split(',')
        : [types];
    if (
      list.length > MESSAGE_TYPES.length ||
      list.some((t) => typeof t !== 'string' || !MESSAGE_TYPES.includes(t))
    ) {
      problems.push({
        path: 'include_return_message_types',
        message: `must be a list of ${MESSAGE_TYPES.join(', ')}`,
      });
    } else view.types = list as string[];
  }
  return view;
}

function urlProtocol(u: string): string {
  try {
    return new URL(u).protocol;
  } catch {
    return '';
  }
}

/**
 * `strictStreamOptions`: Letta's `POST /v1/agents/{id}/messages` refuses its streaming options without
 * `streaming: true` (its 422; here 400 VALIDATION_FAILED); its other routes read past them.
 */
export function parseSendMessage(
  body: unknown,
  opts: { streamPath: boolean; limits: SendMessageLimits; strictStreamOptions?: boolean },
): SendMessageRequest {
  const problems: ValidationProblem[] = [];
  if (!isObj(body)) throw validationFailed([{ path: '', message: 'body must be a JSON object' }]);
  const out: SendMessageRequest = {
    messages: [],
    approvals: null,
    legacyApproval: null,
    maxSteps: null,
    budgets: {},
    streaming: opts.streamPath || body.streaming === true,
    streamTokens: false,
    background: false,
    includePings: body.include_pings !== false,
    includeProgress: body.include_progress === true,
    view: parseView(body, problems),
    clientTools: parseClientTools(body.client_tools, opts.limits, problems),
    conversationId: null,
    callbackUrl: null,
    overrideModel: null,
  };
  out.streamTokens = out.streaming && body.stream_tokens === true;
  out.background = out.streaming && body.background === true;
  if (opts.strictStreamOptions && !out.streaming) {
    // only what differs from the option's default, as Letta checks
    const refused = (path: string, what: string) =>
      problems.push({ path, message: `${what} only with streaming: true` });
    if (body.stream_tokens === true) refused('stream_tokens', 'may be true');
    if (body.include_pings === false) refused('include_pings', 'may be false');
    if (body.background === true) refused('background', 'may be true');
  }
  if (body.input !== undefined && body.input !== null) {
    // Letta 1.x: `input` (a string or content parts) is one user message, before any `messages`
    const content = parseContent(body.input, 'input', opts.limits.images, problems);
    if (content !== null) out.messages.push({ role: 'user', content });
  }
  if (body.messages === undefined || body.messages === null) {
    if (out.messages.length === 0) {
      problems.push({ path: 'messages', message: 'must be a non-empty array (or give input)' });
    }
  } else if (!Array.isArray(body.messages) || body.messages.length === 0) {
    problems.push({ path: 'messages', message: 'must be a non-empty array' });
  } else {
    body.messages.forEach((m: unknown, i) => {
      const path = `messages[${i}]`;
      if (!isObj(m)) return problems.push({ path, message: 'must be an object' });
      if (m.type === 'tool_return') {
        // Letta's ToolReturnCreate: client tools' results without a decision around them
        if (out.approvals)
          return problems.push({ path, message: 'only one approval item allowed' });
        if (!Array.isArray(m.tool_returns) || m.tool_returns.length === 0) {
          return problems.push({
            path: `${path}.tool_returns`,
            message: 'must be a non-empty array',
          });
        }
        out.approvals = m.tool_returns.map((a: unknown, j) =>
          parseAnswer(
            isObj(a) ? { ...a, type: 'tool' } : a,
            `${path}.tool_returns[${j}]`,
            opts.limits,
            problems,
          ),
        );
        return;
      }
      if (m.type === 'approval') {
        if (out.approvals)
          return problems.push({ path, message: 'only one approval item allowed' });
        if (Array.isArray(m.approvals)) {
          out.approvals = m.approvals.map((a: unknown, j) =>
            parseAnswer(a, `${path}.approvals[${j}]`, opts.limits, problems),
          );
          if (out.approvals.length === 0) problems.push({ path, message: 'approvals is empty' });
        } else if (typeof m.approve === 'boolean') {
          const id = m.approval_request_id;
          if (id !== undefined && id !== null && (typeof id !== 'string' || id === ''))
            problems.push({
              path: `${path}.approval_request_id`,
              message: 'must be the id of the approval_request_message (agent.pending_approval.id)',
            });
          out.legacyApproval = { approvalRequestId: typeof id === 'string' ? id : null };
          out.approvals = [
            {
              tool_call_id: '', // filled from the pending request
              approve: m.approve,
              reason: typeof m.reason === 'string' ? m.reason : null,
              grant: parseGrant(m.grant, `${path}.grant`, opts.limits, problems),
            },
          ];
        } else {
          problems.push({ path, message: 'an approval needs approvals[] or approve' });
        }
        return;
      }
      const message = parseMessageCreate(m, path, opts.limits.images, problems);
      if (message) out.messages.push(message);
    });
  }
  if (body.max_steps !== undefined && body.max_steps !== null) {
    const n = body.max_steps;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 10000) {
      problems.push({ path: 'max_steps', message: 'must be a whole number from 1 to 10000' });
    } else out.maxSteps = n;
  }
  const bad = (path: string, message: string) => problems.push({ path, message });
  if (body.callback_url !== undefined && body.callback_url !== null) {
    const u = body.callback_url;
    const max = opts.limits.maxUrlLength;
    if (typeof u !== 'string' || u.length > max || !/^https?:$/.test(urlProtocol(u)))
      bad(
        'callback_url',
        `must be an http:// or https:// URL of at most ${max} characters (webhooks.url_max_length)`,
      );
    else out.callbackUrl = u;
  }
  if (body.override_model !== undefined && body.override_model !== null) {
    const m = body.override_model;
    if (typeof m !== 'string' || m.length === 0 || m.length > MAX_MODEL_HANDLE)
      bad(
        'override_model',
        `must be a model handle "provider/model" of at most ${MAX_MODEL_HANDLE} characters`,
      );
    else out.overrideModel = m;
  }
  for (const k of BUDGET_FIELD_NAMES) {
    const v = parseBudgetValue(k, body[k], k, bad);
    if (v !== null) out.budgets[k] = v;
  }
  if (problems.length) throw validationFailed(problems);
  return out;
}
