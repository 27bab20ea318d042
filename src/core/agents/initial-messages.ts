import { countProblem, type InputLimits } from '../limits';
import type { ImageLimits } from '../loop/content-parts';
import { type MessageCreate, parseMessageCreate } from '../loop/message-create';
import type { ValidationProblem } from '../rules/validate-tool-rules';

/**
 * Letta's `initial_message_sequence` on agent create: the messages that start the agent's history in
 * place of Letta's default boot messages (which this server does not write). Each is a `MessageCreate`
 * (`user`, `system`, or `assistant`: the agent's own words). Null when not given (absent or null);
 * an empty list starts the agent with no messages, as Letta's does. Problems are added at their paths.
 */
export function parseInitialMessages(
  body: unknown,
  limits: Pick<InputLimits, 'max_initial_messages'>,
  images: ImageLimits,
  problems: ValidationProblem[],
): MessageCreate[] | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const v = (body as Record<string, unknown>).initial_message_sequence;
  if (v === undefined || v === null) return null;
  const path = 'initial_message_sequence';
  if (!Array.isArray(v)) {
    problems.push({ path, message: 'must be a list of messages ({role, content})' });
    return null;
  }
  const tooMany = countProblem(path, v.length, 'max_initial_messages', limits);
  if (tooMany) {
    problems.push(tooMany);
    return null;
  }
  const out: MessageCreate[] = [];
  v.forEach((m, i) => {
    const message = parseMessageCreate(m, `${path}[${i}]`, images, problems);
    if (message) out.push(message);
  });
  return out;
}
