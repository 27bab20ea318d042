/**
 * The tool calls of one model response, each with an id of its own in it. Some OpenAI-compatible
 * servers (older llama.cpp, Ollama and vLLM builds, some proxies) give two calls of one response the
 * same id, or none; the calls are distinct all the same, and a history with one id twice in an
 * assistant message is invalid (each call is paired with one tool message by its id). A repeated id
 * gets a suffix (`call_0`, `call_0_2`, `call_0_3`, never an id the response already uses); a missing
 * one a new id. An id given once stays exactly as given, and without a repeat the same array comes back.
 *
 * Ids reused across responses are left alone: a call is its id within the step that made it.
 */
export function uniqueCallIds<T extends { id: string }>(calls: T[], newId: () => string): T[] {
  if (calls.length === 0) return calls;
  const given = new Set<string>();
  let clash = false;
  for (const c of calls) {
    if (!c.id || given.has(c.id)) clash = true;
    given.add(c.id);
  }
  if (!clash) return calls;
  const taken = new Set(given);
  const seen = new Set<string>();
  return calls.map((c) => {
    if (c.id && !seen.has(c.id)) {
      seen.add(c.id);
      return c;
    }
    let id: string;
    if (!c.id) {
      do id = newId();
      while (taken.has(id));
    } else {
      let n = 2;
      while (taken.has(`${c.id}_${n}`)) n++;
      id = `${c.id}_${n}`;
    }
    taken.add(id);
    return { ...c, id };
  });
}

/** A call of an agent, as a key: its tool_call_id within the step that made it (ids may repeat across steps). */
export const stepCallKey = (stepId: string | null | undefined, toolCallId: string): string =>
  `${stepId ?? ''}\u0000${toolCallId}`;
