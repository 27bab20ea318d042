import { chatImages, chatText, IMAGE_TOKENS } from '../core/loop/content-parts';
import { ChatMessage } from './model-provider';

/** Rough per-message overhead (role, separators) in tokens, as OpenAI's chat format adds. */
const MESSAGE_OVERHEAD = 4;

/** Approximate tokens of a text: about 4 characters a token for English and JSON. */
export const countTextTokens = (text: string): number => Math.ceil(text.length / 4);

/**
 * Approximate prompt tokens of a message list (chars/4 plus a small per-message overhead).
 * Cheap and tokenizer-free: good enough to fit history into a context window with some headroom.
 */
export function countTokens(messages: readonly ChatMessage[]): number {
  let chars = 0;
  for (const m of messages) {
    chars += chatText(m.content).length + chatImages(m.content) * IMAGE_TOKENS * 4;
    if (m.role === 'assistant' && m.tool_calls) {
      for (const c of m.tool_calls)
        chars += c.function.name.length + c.function.arguments.length + c.id.length;
    }
  }
  return Math.ceil(chars / 4) + messages.length * MESSAGE_OVERHEAD;
}
