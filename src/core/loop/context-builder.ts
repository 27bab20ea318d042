import type { ChatMessage } from '../../models/model-provider';
import { chatImages, chatText, IMAGE_TOKENS, toChatContent } from './content-parts';

/**
 * Builds the model's context from stored messages: the system prompt with memory blocks,
 * then as much history as fits the context window, newest first, always keeping the current user message.
 */

/** A stored message as the context needs it (Letta message types, payload as stored). */
export interface HistoryMessage {
  id: string;
  message_type: string;
  step_id: string | null;
  payload: Record<string, unknown>;
}

export interface MemoryBlockView {
  label: string;
  value: string;
  description?: string | null;
}

export interface ContextInput {
  system: string;
  blocks: MemoryBlockView[];
  /** The agent's history in sequence order (oldest first). */
  history: HistoryMessage[];
  /** Id of the current batch's user message: its unit is always kept. */
  currentMessageId: string | null;
  contextWindow: number;
  /** Tokens kept free for the answer and the tool schemas. */
  reserveTokens: number;
  countTokens: (text: string) => number;
}

export function renderSystemPrompt(system: string, blocks: MemoryBlockView[]): string {
  if (blocks.length === 0) return system;
  const sections = blocks.map((b) => `### ${b.label}\n${b.value}`);
  return `${system}\n\n${sections.join('\n\n')}`;
}

type ToolCallPart = { id: string; type: 'function'; function: { name: string; arguments: string } };

const str = (v: unknown): string =>
  typeof v === 'string' ? v : v == null ? '' : JSON.stringify(v);

/** The calls an approval_request_message asks about: its `tool_calls` (Letta's), else its `tool_call`. */
export function requestedCalls(payload: Record<string, unknown>): unknown[] {
  if (Array.isArray(payload.tool_calls)) return payload.tool_calls as unknown[];
  return payload.tool_call ? [payload.tool_call] : [];
}

function toolCallOf(payload: Record<string, unknown>): ToolCallPart | null {
  return toolCallPart(payload.tool_call);
}

function toolCallPart(v: unknown): ToolCallPart | null {
  const tc = v as Record<string, unknown> | undefined;
  if (!tc || typeof tc.tool_call_id !== 'string' || typeof tc.name !== 'string') return null;
  return {
    id: tc.tool_call_id,
    type: 'function',
    function: { name: tc.name, arguments: str(tc.arguments) || '{}' },
  };
}

interface Turn {
  stepId: string | null;
  content: string | null;
  calls: ToolCallPart[];
  results: Map<string, string>;
  ids: string[];
}

/** A group that must stay together: a user message, or an assistant turn with its tool results. */
export interface Unit {
  messages: ChatMessage[];
  ids: string[];
}

/** Turns stored messages into chat units; tool calls without a result are dropped (providers reject them). */
export function toChatUnits(history: HistoryMessage[]): Unit[] {
  const grouper = new UnitGrouper();
  for (const m of history) grouper.add(m);
  return grouper.end();
}

/**
 * Groups stored messages into chat units one message at a time. A message only ever joins the current
 * turn (a tool return of an earlier step too), so the units of the turns before it are final: the
 * context window's open batch adds its messages here instead of regrouping the batch at every step.
 */
export class UnitGrouper {
  /** The units of the turns that ended, in order: they no longer change. */
  readonly units: Unit[] = [];
  private turn: Turn | null = null;
  /** The current turn's unit, built once per change of the turn (undefined: not built). */
  private current: Unit | null | undefined = undefined;

  add(m: HistoryMessage): void {
    switch (m.message_type) {
      case 'user_message':
      case 'system_message': {
        this.flush();
        this.units.push({
          messages: [{ role: 'user', content: toChatContent(m.payload.content) }],
          ids: [m.id],
        });
        break;
      }
      case 'assistant_message': {
        if (m.payload._derived) break; // the send_message text: already in the tool call
        const t = this.turnFor(m);
        t.content = (t.content ?? '') + str(m.payload.content);
        break;
      }
      case 'tool_call_message':
      case 'approval_request_message': {
        const calls =
          m.message_type === 'tool_call_message'
            ? [toolCallOf(m.payload)]
            : requestedCalls(m.payload).map(toolCallPart);
        // a call that may park is stored held (a tool_call_message), then as its approval request or
        // its shown tool_call_message: offered once. Only within its step: a provider may give the
        // next response's call the same id, and that is another call, of another turn
        const same = this.sameStep(m) ? this.turn : null;
        const added = calls.filter(
          (call): call is ToolCallPart =>
            call !== null && !same?.calls.some((c) => c.id === call.id),
        );
        if (added.length) this.turnFor(m).calls.push(...added);
        break;
      }
      case 'tool_return_message': {
        // a tool return stored later (a resumed call's, after its approval) still belongs to its turn,
        // which is its step's (a return of a reused id from another step is not this turn's call's)
        const id = str(m.payload.tool_call_id);
        const turn = this.turn;
        if (
          turn?.calls.some((c) => c.id === id) &&
          (m.step_id === null || turn.stepId === null || turn.stepId === m.step_id)
        ) {
          turn.results.set(id, str(m.payload.tool_return));
          turn.ids.push(m.id);
          this.current = undefined;
        }
        break;
      }
      default:
        break; // reasoning and approval responses are not replayed
    }
  }

  /** The current turn's unit as it stands (null: none, or nothing in it to show); the same object until it changes. */
  pending(): Unit | null {
    if (this.current === undefined)
      this.current = this.turn && unitOf(this.turn, [...this.turn.ids]);
    return this.current;
  }

  /** Ends the current turn: every unit. */
  end(): Unit[] {
    this.flush();
    return this.units;
  }

  private flush(): void {
    // the current unit, when built, is the turn as it stands: kept, so that its cost is reused too
    const unit =
      this.current !== undefined ? this.current : this.turn && unitOf(this.turn, this.turn.ids);
    if (unit) this.units.push(unit);
    this.turn = null;
    this.current = undefined;
  }

  /** The message is of the current turn's step (a message without a step starts a turn of its own). */
  private sameStep(m: HistoryMessage): boolean {
    return this.turn !== null && m.step_id !== null && this.turn.stepId === m.step_id;
  }

  private turnFor(m: HistoryMessage): Turn {
    if (this.turn && !this.sameStep(m)) this.flush();
    this.turn ??= { stepId: m.step_id, content: null, calls: [], results: new Map(), ids: [] };
    this.turn.ids.push(m.id);
    this.current = undefined;
    return this.turn;
  }
}

/** A turn's unit: its text and the calls that have a result, each followed by it. */
function unitOf(t: Turn, ids: string[]): Unit | null {
  const calls = t.calls.filter((c) => t.results.has(c.id));
  if (t.content === null && calls.length === 0) return null;
  const messages: ChatMessage[] = [
    { role: 'assistant', content: t.content, ...(calls.length ? { tool_calls: calls } : {}) },
  ];
  for (const c of calls) {
    messages.push({ role: 'tool', tool_call_id: c.id, content: t.results.get(c.id)! });
  }
  return { messages, ids };
}

/** What the model gets, and its tokens as counted to fit it (the system prompt's and each unit's). */
export interface BuiltContext {
  messages: ChatMessage[];
  tokens: number;
  /** Whether a message carries image parts (content as parts only when it does: `toChatContent`). */
  images: boolean;
}

/** Everything the model gets: system prompt, then the newest history that fits. */
export function buildContext(input: ContextInput): BuiltContext {
  const system = renderSystemPrompt(input.system, input.blocks);
  // every message costs at least 4 tokens: older ones than this could never fit
  const maxMessages = Math.max(64, Math.ceil(input.contextWindow / 4));
  const history =
    input.history.length > maxMessages ? input.history.slice(-maxMessages) : input.history;
  const systemTokens = input.countTokens(system);
  const cost = (u: Unit) => unitCost(u, input.countTokens);
  const budget = input.contextWindow - input.reserveTokens - systemTokens;
  const kept = selectUnits(toChatUnits(history), cost, budget, input.currentMessageId);
  const messages: ChatMessage[] = [
    { role: 'system', content: system },
    ...kept.flatMap((u) => u.messages),
  ];
  return {
    messages,
    tokens: kept.reduce((n, u) => n + cost(u), systemTokens),
    images: messages.some((m) => Array.isArray(m.content)),
  };
}

/**
 * The units that fit `budget`, in order: the current batch's (from the unit of `currentMessageId` on)
 * first, newest first, skipping one that does not fit unless it is the current message's; then older
 * ones, newest first, up to the first that does not fit. Looks at no unit older than that one.
 */
export function selectUnits<U extends Unit>(
  units: U[],
  cost: (u: U) => number,
  budget: number,
  currentMessageId: string | null,
): U[] {
  let currentIndex = -1;
  if (currentMessageId !== null)
    for (let i = units.length - 1; i >= 0; i--)
      if (units[i].ids.includes(currentMessageId)) {
        currentIndex = i;
        break;
      }
  const kept: U[] = [];
  // units from the current message on are this batch: kept whole (newest first, the current message last)
  const firstBatchUnit = currentIndex >= 0 ? currentIndex : units.length;
  for (let i = units.length - 1; i >= firstBatchUnit; i--) {
    const c = cost(units[i]);
    if (c > budget && i !== currentIndex) continue;
    budget -= c;
    kept.push(units[i]);
  }
  for (let i = firstBatchUnit - 1; i >= 0; i--) {
    const c = cost(units[i]);
    if (c > budget) break;
    budget -= c;
    kept.push(units[i]);
  }
  return kept.reverse();
}

/** A unit's tokens: 4 per message plus its text and tool calls. */
export function unitCost(u: Unit, countTokens: (text: string) => number): number {
  return u.messages.reduce((n, m) => {
    const calls = m.role === 'assistant' && m.tool_calls ? JSON.stringify(m.tool_calls) : '';
    return n + 4 + countTokens(chatText(m.content) + calls) + chatImages(m.content) * IMAGE_TOKENS;
  }, 0);
}

/** A rough token count (4 characters a token) for when no tokenizer is given. */
export const approxTokens = (text: string): number => Math.ceil(text.length / 4);
