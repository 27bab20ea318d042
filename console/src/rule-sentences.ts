import { asText } from './api';

/** Tool rules as sentences a person reads (docs/executor.md has the exact semantics). */
const list = (xs: unknown) =>
  Array.isArray(xs) ? xs.map((x) => `“${asText(x)}”`).join(', ') : '(none)';

export function ruleSentence(r: Record<string, unknown>): string {
  const t = `“${asText(r.tool_name ?? '?')}”`;
  switch (r.type) {
    case 'run_first':
    case 'start_constraint':
      return `Each pass starts with ${t}${r.args ? ` (arguments prefilled: ${JSON.stringify(r.args)})` : ''}.`;
    case 'exit_loop':
      return `Calling ${t} ends the batch.`;
    case 'continue_loop':
      return `After ${t} the agent keeps going in the same pass.`;
    case 'constrain_child_tools':
      return `After ${t}, only ${list(r.children)} may follow.`;
    case 'parent_last_tool':
      return `${list(r.children)} may only run right after ${t}, and only they may follow it.`;
    case 'conditional':
      return `After ${t}, the next tool depends on its output: ${Object.entries(
        (r.child_output_mapping as Record<string, string>) ?? {},
      )
        .map(([out, tool]) => `“${out}” → “${tool}”`)
        .join(', ')}${r.default_child ? `; otherwise “${asText(r.default_child)}”` : ''}.`;
    case 'max_count_per_step':
    case 'max_calls':
      return r.tool_name === '*'
        ? `Every tool runs at most ${asText(r.max_count_limit)} time(s) per batch.`
        : `${t} runs at most ${asText(r.max_count_limit)} time(s) per batch.`;
    case 'required_before_exit':
      return `The batch cannot end until ${t} has run.`;
    case 'requires_preceding_tools':
      return `${t} requires ${list(r.tools)} earlier in the same pass.`;
    case 'requires_following_tools':
      return `Once ${t} runs, ${list(r.tools)} must follow before the batch ends.`;
    case 'exclusive_group':
      return `Only one of ${list(r.tools)} may be used in a batch${r.group ? ` (group “${asText(r.group)}”)` : ''}.`;
    case 'cooldown':
      return `${t} cannot run again within ${asText(r.seconds)} s of its last run.`;
    case 'dedupe':
      return `An identical ${t} call within ${asText(r.window_seconds)} s is ${
        r.mode === 'return_cached'
          ? 'answered from the cache'
          : r.mode === 'off'
            ? 'allowed (dedupe off)'
            : 'refused'
      }.`;
    case 'requires_consent':
    case 'requires_approval':
      return `${t} needs a person’s consent${r.scope ? ` (scope “${asText(r.scope)}”)` : ''}.`;
    default:
      return `${asText(r.type)}: ${JSON.stringify(r)}`;
  }
}
