import type { ChatMessage } from '../../models/model-provider';
import { chatText } from './content-parts';
import { HistoryMessage, toChatUnits } from './context-builder';

/**
 * Compaction (Letta's summarize): the older in-context messages are summarized by the agent's model and
 * the summary stands in for them in the context window; the stored history is not touched.
 */

/** Letta's modes; the `self_compact_*` ones are summarized the same way as their plain counterparts. */
export type CompactionMode = 'all' | 'sliding_window';

/** Share of the in-context messages a sliding window keeps as they are (Letta's default). */
export const DEFAULT_KEEP_SHARE = 0.3;
/** Characters of one message given to the summarizer (a huge tool result is cut, not dropped). */
const MESSAGE_CHARS = 4000;

export interface CompactionPlan {
  /** What the summarizer reads (at most `maxMessages` of the older messages, the newest of them). */
  summarized: HistoryMessage[];
  /** Older messages beyond `maxMessages`: out of context, not summarized. */
  dropped: number;
  /** The first message that stays in context (null: none stays). */
  keepFrom: HistoryMessage | null;
}

/**
 * Splits the in-context messages (oldest first) into the part to summarize and the part kept. The kept
 * part starts at a user or system message, so an assistant turn and its tool results are never split.
 * Null when there is nothing to summarize.
 */
export function planCompaction(
  inContext: HistoryMessage[],
  mode: CompactionMode,
  maxMessages: number,
  keepShare = DEFAULT_KEEP_SHARE,
): CompactionPlan | null {
  let cut = inContext.length;
  if (mode === 'sliding_window') {
    const target = Math.ceil(inContext.length * (1 - keepShare));
    const starts = inContext.flatMap((m, i) => (i > 0 && opensUnit(m) ? [i] : []));
    cut = starts.find((i) => i >= target) ?? starts.at(-1) ?? 0;
  }
  if (cut === 0) return null;
  const older = inContext.slice(0, cut);
  const summarized = older.slice(-maxMessages);
  return {
    summarized,
    dropped: older.length - summarized.length,
    keepFrom: inContext[cut] ?? null,
  };
}

const opensUnit = (m: HistoryMessage) =>
  m.message_type === 'user_message' || m.message_type === 'system_message';

/**
 * The newer half of the messages to summarize, from a user or system message on (a turn is not split):
 * what the summarizer reads when the whole did not fit the model's context window. Empty when no such
 * message is in the newer half.
 */
export function newerHalf(summarized: HistoryMessage[]): HistoryMessage[] {
  const from = summarized.findIndex(
    (m, i) => i >= Math.ceil(summarized.length / 2) && opensUnit(m),
  );
  return from < 0 ? [] : summarized.slice(from);
}

const DEFAULT_PROMPT =
  'Summarize the conversation below for your own future reference: who the user is, what was asked, ' +
  'what was done (tool calls and their results), what was decided and what is still open. ' +
  'Write plain prose, at most a few paragraphs; answer with the summary only.';

/** The summarizer's request: an instruction, then the earlier summary (if any) and the transcript. */
export function summarizerMessages(
  summarized: HistoryMessage[],
  previousSummary: string | null,
  prompt: string | null,
): ChatMessage[] {
  const lines: string[] = [];
  if (previousSummary) lines.push(`(summary of what came before)\n${previousSummary}`);
  for (const unit of toChatUnits(summarized))
    for (const m of unit.messages) lines.push(transcriptLine(m));
  return [
    { role: 'system', content: prompt ?? DEFAULT_PROMPT },
    { role: 'user', content: lines.join('\n\n') },
  ];
}

function transcriptLine(m: ChatMessage): string {
  const cut = (s: string) => (s.length > MESSAGE_CHARS ? `${s.slice(0, MESSAGE_CHARS)}…` : s);
  if (m.role === 'assistant') {
    const calls = (m.tool_calls ?? []).map((c) => `${c.function.name}(${c.function.arguments})`);
    return [
      m.content ? `assistant: ${cut(m.content)}` : null,
      ...calls.map((c) => `assistant called ${cut(c)}`),
    ]
      .filter(Boolean)
      .join('\n');
  }
  if (m.role === 'tool') return `tool result: ${cut(m.content)}`;
  return `${m.role}: ${cut(chatText(m.content))}`;
}

/** The summary as the context window shows it: a system message where the summarized ones were. */
export function summaryHistoryMessage(id: string, summary: string): HistoryMessage {
  return {
    id,
    message_type: 'system_message',
    step_id: null,
    payload: {
      content: `Summary of the earlier conversation (older messages are out of context):\n${summary}`,
    },
  };
}
