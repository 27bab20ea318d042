import type { ValidationProblem } from '../rules/validate-tool-rules';
import {
  contentText,
  hasImages,
  type ImageLimits,
  type MessageContent,
  parseContent,
} from './content-parts';

/**
 * Letta's `MessageCreate` as this server keeps it: a role (`user`, `system`, or `assistant`: the
 * agent's own words, text only), its content (text, or text and base64 images) and the client's `otid`.
 */
export interface MessageCreate {
  role: 'user' | 'system' | 'assistant';
  content: MessageContent;
  otid?: string;
}

/** The longest `otid` kept (Letta's offline id: a client's uuid). */
export const MAX_OTID_LENGTH = 200;

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * One `MessageCreate` at `path`: null when it is not one (its problems added). A missing role is
 * `user`, as Letta's clients mean it.
 */
export function parseMessageCreate(
  m: unknown,
  path: string,
  images: ImageLimits,
  problems: ValidationProblem[],
): MessageCreate | null {
  if (!isObj(m)) {
    problems.push({ path, message: 'must be an object' });
    return null;
  }
  const role = m.role ?? 'user';
  if (role !== 'user' && role !== 'system' && role !== 'assistant') {
    problems.push({ path: `${path}.role`, message: 'must be "user", "system" or "assistant"' });
    return null;
  }
  let content = parseContent(m.content, `${path}.content`, images, problems);
  if (role === 'assistant' && content !== null) {
    // the model's own turns are text
    if (hasImages(content)) {
      problems.push({ path: `${path}.content`, message: 'must be text for "assistant"' });
      return null;
    }
    content = contentText(content);
  }
  const otid = m.otid;
  if (
    otid !== undefined &&
    otid !== null &&
    (typeof otid !== 'string' || otid.length > MAX_OTID_LENGTH)
  ) {
    problems.push({
      path: `${path}.otid`,
      message: `must be a text of at most ${MAX_OTID_LENGTH} characters`,
    });
    return null;
  }
  if (content === null) return null;
  return { role, content, ...(typeof otid === 'string' ? { otid } : {}) };
}
