/** The parsed arguments object, or the raw text when it is not a JSON object (the executor refuses it). */
export function parseArgs(text: string): Record<string, unknown> | string {
  if (text.trim() === '') return {};
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : text;
  } catch {
    return text;
  }
}

/** The text of a `send_message` call (Letta clients read it as an assistant_message), if it has one. */
export function sendMessageText(toolName: string, argumentsText: string): string | undefined {
  if (toolName !== 'send_message') return undefined;
  const args = parseArgs(argumentsText);
  return typeof args === 'object' && typeof args.message === 'string' ? args.message : undefined;
}
