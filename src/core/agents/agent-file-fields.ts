import { unknownKeyMessage } from '../did-you-mean';
import type { ValidationProblem } from '../rules/validate-tool-rules';

/**
 * The fields an agent file (config/agents/*.yaml) may have: those `validateAgentInput` reads. The API
 * ignores fields Letta's clients send that we do not use; a file is written by hand, so a field we do
 * not know is a typo (`sytem:`) and stops the boot. A field the API learns belongs here too.
 */
export const AGENT_FILE_FIELDS = [
  'name',
  'description',
  'agent_type',
  'system',
  'model',
  'llm_config',
  'tools',
  'include_base_tools',
  'include_base_tool_rules',
  'tool_rules',
  'memory_blocks',
  'tags',
  'metadata',
  'tool_executor',
  'max_steps',
  'budgets',
  'client_tools',
  'context_window_limit',
  'model_settings',
  'model_script',
  'embedding',
  'timezone',
  'hidden',
  'max_files_open',
  'per_file_view_window_char_limit',
] as const;

/** One problem per field of `doc` that an agent file may not have, with a suggestion. */
export function unknownAgentFileFields(doc: Record<string, unknown>): ValidationProblem[] {
  return Object.keys(doc)
    .filter((k) => !(AGENT_FILE_FIELDS as readonly string[]).includes(k))
    .map((k) => ({ path: k, message: unknownKeyMessage(k, AGENT_FILE_FIELDS) }));
}
