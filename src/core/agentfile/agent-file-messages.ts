import type { ValidationProblem } from '../rules/validate-tool-rules';
import { ContentPart, hasImages, ImageLimits, parseContent } from '../loop/content-parts';
import { sendMessageText } from '../loop/tool-arguments';

/**
 * Messages of Letta's agent file (`.af`, AgentFileSchema v2: Letta's `Message` rows, OpenAI-style roles)
 * to and from our stored Letta messages. Only what the context and history need travels: user, system
 * and assistant text, tool calls and their returns. Reasoning and approval messages stay behind.
 */

/** A stored message as the conversion needs it. */
export interface StoredMessage {
  id: string;
  message_type: string;
  step_id: string | null;
  payload: Record<string, unknown>;
  created_at: number;
}

export interface AfToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One message of an agent file (Letta's MessageSchema, the fields we read and write). */
export interface AfMessage {
  id: string;
  role: 'user' | 'system' | 'assistant' | 'tool';
  content: ContentPart[];
  tool_calls?: AfToolCall[];
  tool_call_id?: string;
  tool_returns?: { tool_call_id: string; status: 'success' | 'error'; func_response: string }[];
  name?: string;
  created_at: string;
}

/** A message to store, before it gets its ids; `turn` groups an assistant turn's rows into one step. */
export interface ImportedMessage {
  fileId: string;
  message_type: string;
  payload: Record<string, unknown>;
  turn: number | null;
  created_at: number;
}

const str = (v: unknown) => (typeof v === 'string' ? v : v == null ? '' : JSON.stringify(v));
const text = (t: string) => [{ type: 'text' as const, text: t }];

/**
 * Our history (oldest first) as agent-file messages; ids are the file's own (`message-<n>`). The first
 * is the compiled system prompt, as Letta's files start (its in-context list starts with it too).
 */
export function toAfMessages(
  rows: StoredMessage[],
  systemPrompt: string,
  at: number,
): { messages: AfMessage[]; idOf: Map<string, string> } {
  const messages: AfMessage[] = [
    {
      id: 'message-0',
      role: 'system',
      content: text(systemPrompt),
      created_at: new Date(at).toISOString(),
    },
  ];
  const idOf = new Map<string, string>();
  let turn: { step: string | null; msg: AfMessage } | null = null;
  const add = (row: StoredMessage, m: Omit<AfMessage, 'id' | 'created_at'>): AfMessage => {
    const out: AfMessage = {
      id: `message-${messages.length}`,
      ...m,
      created_at: new Date(row.created_at).toISOString(),
    };
    messages.push(out);
    idOf.set(row.id, out.id);
    return out;
  };
  for (const row of rows) {
    const p = row.payload;
    switch (row.message_type) {
      case 'user_message':
      case 'system_message':
        turn = null;
        add(row, {
          role: row.message_type === 'user_message' ? 'user' : 'system',
          // image parts are stored in Letta's own ImageContent shape: they travel as they are
          content: Array.isArray(p.content) ? (p.content as ContentPart[]) : text(str(p.content)),
        });
        break;
      case 'assistant_message':
      case 'tool_call_message': {
        if (p._derived) break; // send_message's text: carried by its tool call
        const sameTurn = turn && turn.step !== null && turn.step === row.step_id;
        if (!sameTurn)
          turn = { step: row.step_id, msg: add(row, { role: 'assistant', content: [] }) };
        else idOf.set(row.id, turn!.msg.id);
        const msg = turn!.msg;
        if (row.message_type === 'assistant_message') msg.content.push(...text(str(p.content)));
        else {
          const tc = (p.tool_call ?? {}) as Record<string, unknown>;
          const calls = (msg.tool_calls ??= []);
          // a call held until its outcome was known is stored twice once it ran: exported once
          if (!calls.some((c) => c.id === str(tc.tool_call_id)))
            calls.push({
              id: str(tc.tool_call_id),
              type: 'function',
              function: { name: str(tc.name), arguments: str(tc.arguments) },
            });
        }
        break;
      }
      case 'tool_return_message': {
        const status = p.status === 'error' ? 'error' : 'success';
        add(row, {
          role: 'tool',
          content: text(str(p.tool_return)),
          tool_call_id: str(p.tool_call_id),
          ...(typeof p.name === 'string' ? { name: p.name } : {}),
          tool_returns: [
            { tool_call_id: str(p.tool_call_id), status, func_response: str(p.tool_return) },
          ],
        });
        break;
      }
      default:
        break; // reasoning, approval requests and responses
    }
  }
  return { messages, idOf };
}

/** The text of a message's content: a string, or the text parts of a list. */
function textOfParts(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content == null ? '' : null;
  const parts: string[] = [];
  for (const c of content) {
    if (typeof c !== 'object' || c === null) return null;
    const part = c as Record<string, unknown>;
    if (part.type === 'text' && typeof part.text === 'string') parts.push(part.text);
  }
  return parts.join('\n');
}

/**
 * Agent-file messages (oldest first) as rows to store. A leading `system` message that is the first
 * in-context one is Letta's compiled system prompt (the agent's `system` carries it): skipped.
 */
export function fromAfMessages(
  input: unknown[],
  opts: {
    /** The first in-context message's id: a `system` message with it is the compiled prompt. */
    systemPromptId: string | null;
    path: string;
    images: ImageLimits;
    /** MemGPT-style agents: an assistant's text is its inner monologue (a reasoning message). */
    innerThoughts: boolean;
  },
): { messages: ImportedMessage[]; problems: ValidationProblem[] } {
  const messages: ImportedMessage[] = [];
  const problems: ValidationProblem[] = [];
  input.forEach((raw, i) => {
    const at = `${opts.path}[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      problems.push({ path: at, message: 'must be an object' });
      return;
    }
    const m = raw as Record<string, unknown>;
    const fileId = typeof m.id === 'string' ? m.id : `#${i}`;
    if (fileId === opts.systemPromptId && m.role === 'system') return;
    const created = typeof m.created_at === 'string' ? Date.parse(m.created_at) : NaN;
    const base = { fileId, created_at: Number.isFinite(created) ? created : 0 };
    const body = textOfParts(m.content);
    if (body === null) {
      problems.push({
        path: `${at}.content`,
        message: 'must be a text or a list of content parts',
      });
      return;
    }
    switch (m.role) {
      case 'user':
      case 'system': {
        // images are checked as on the messages endpoint (base64, media type, size, count)
        const content = hasImages(m.content)
          ? parseContent(m.content, `${at}.content`, opts.images, problems)
          : body;
        if (content !== null)
          messages.push({
            ...base,
            message_type: m.role === 'user' ? 'user_message' : 'system_message',
            payload: { content },
            turn: null,
          });
        break;
      }
      case 'assistant': {
        if (body)
          messages.push({
            ...base,
            ...(opts.innerThoughts
              ? { message_type: 'reasoning_message', payload: { reasoning: body } }
              : { message_type: 'assistant_message', payload: { content: body } }),
            turn: i,
          });
        const calls = m.tool_calls ?? [];
        if (!Array.isArray(calls)) {
          problems.push({ path: `${at}.tool_calls`, message: 'must be a list' });
          break;
        }
        calls.forEach((c: unknown, j) => {
          const fn = (c as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
          const id = (c as { id?: unknown } | null)?.id;
          if (typeof id !== 'string' || typeof fn?.name !== 'string') {
            problems.push({
              path: `${at}.tool_calls[${j}]`,
              message: 'must be {id, function: {name, arguments}}',
            });
            return;
          }
          const args = str(fn.arguments);
          messages.push({
            ...base,
            message_type: 'tool_call_message',
            payload: { tool_call: { name: fn.name, arguments: args, tool_call_id: id } },
            turn: i,
          });
          const said = sendMessageText(fn.name, args);
          if (said !== undefined)
            messages.push({
              ...base,
              message_type: 'assistant_message',
              payload: { content: said, _derived: true },
              turn: i,
            });
        });
        break;
      }
      case 'tool': {
        const ret = Array.isArray(m.tool_returns)
          ? (m.tool_returns[0] as Record<string, unknown> | undefined)
          : undefined;
        const callId = typeof m.tool_call_id === 'string' ? m.tool_call_id : str(ret?.tool_call_id);
        if (!callId) {
          problems.push({ path: `${at}.tool_call_id`, message: 'is required for a tool message' });
          break;
        }
        messages.push({
          ...base,
          message_type: 'tool_return_message',
          payload: {
            tool_return: body || str(ret?.func_response),
            status: ret?.status === 'error' ? 'error' : 'success',
            tool_call_id: callId,
            ...(typeof m.name === 'string' ? { name: m.name } : {}),
          },
          turn: null,
        });
        break;
      }
      default:
        problems.push({ path: `${at}.role`, message: 'must be user, system, assistant or tool' });
    }
  });
  return { messages, problems };
}
