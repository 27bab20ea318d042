import { chatText } from '../core/loop/content-parts';
import { countTokens } from './token-count';
import { ModelError, ModelProvider, ModelRequest, ModelResponse } from './model-provider';

export const END_OF_SCRIPT = '(scripted model: end of script)';

/** Makes tool-call ids unique across runs and restarts (the executor refuses an id it already executed). */
function defaultIdSuffix(): () => string {
  const boot = Math.floor(Math.random() * 36 ** 6).toString(36);
  let n = 0;
  return () => `${boot}${(++n).toString(36)}`;
}

/**
 * The offline provider: plays `req.script[req.batchStep]`, no network, no key.
 * - A turn gives content, reasoning and tool calls (ids `call_<batchStep>_<i>_<unique suffix>`).
 * - Past the end of the script it answers END_OF_SCRIPT; with no script at all it echoes the last user
 *   message ("You said: …"). Either way with no tool calls, so a batch always ends.
 * - It does not obey `toolChoice`: a scripted call to a tool that is not allowed or not forced is returned
 *   as scripted, and the executor refuses it, which is how scripts exercise the rules.
 */
export class ScriptedProvider implements ModelProvider {
  constructor(private readonly idSuffix: () => string = defaultIdSuffix()) {}

  complete(req: ModelRequest): Promise<ModelResponse> {
    if (req.signal?.aborted)
      return Promise.reject(new ModelError('cancelled', 'the model call was cancelled'));
    const turn = req.script?.[req.batchStep];
    let content: string | null;
    let reasoning: string | null = null;
    let toolCalls: ModelResponse['toolCalls'] = [];
    if (turn) {
      content = turn.content ?? null;
      reasoning = turn.reasoning ?? null;
      if (turn.tool_calls?.length) {
        const suffix = this.idSuffix();
        toolCalls = turn.tool_calls.map((c, i) => ({
          id: `call_${req.batchStep}_${i}_${suffix}`,
          name: c.name,
          argumentsText: JSON.stringify(c.arguments ?? {}),
        }));
      }
    } else if (req.script) {
      content = END_OF_SCRIPT;
    } else {
      content = `You said: ${lastUserText(req)}`;
    }
    if (content && req.stream) req.onTextDelta?.(content);

    const prompt = req.promptTokens ?? countTokens(req.messages);
    let completionChars = (content?.length ?? 0) + (reasoning?.length ?? 0);
    for (const c of toolCalls) completionChars += c.name.length + c.argumentsText.length;
    const completion = Math.ceil(completionChars / 4);
    return Promise.resolve({
      content,
      reasoning,
      toolCalls,
      usage: {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
      },
      finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
    });
  }
}

function lastUserText(req: ModelRequest): string {
  for (let i = req.messages.length - 1; i >= 0; i--) {
    const m = req.messages[i];
    if (m.role === 'user') return chatText(m.content);
  }
  return '';
}
