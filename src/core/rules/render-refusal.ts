import type { ToolErrorType } from '../executor/contracts';
import { list } from './verdict';

/**
 * The one place that turns a verdict into the text the model reads as the tool return:
 * `[Tool<Kind>] <detail>; allowed now: a, b`. Unknown tools list the available ones instead.
 */
export function renderRefusal(
  code: ToolErrorType,
  detail: string,
  allowedNow?: readonly string[],
): string {
  const head = `[Tool${code}] ${detail}`;
  if (!allowedNow) return head;
  return code === 'NotFound'
    ? `${head}; available: ${list(allowedNow)}`
    : `${head}; allowed now: ${list(allowedNow)}`;
}
