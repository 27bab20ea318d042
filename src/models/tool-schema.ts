import { ToolDefinition } from '../core/tools/tool-definition';
import { ToolSchema } from './model-provider';

/** Letta's wording for the heartbeat flag every offered tool gains. */
export const REQUEST_HEARTBEAT_DESCRIPTION =
  'Request an immediate heartbeat after function execution. Set to `true` if you want to send a follow-up message or run a follow-up function.';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The chat-completions schema offered to the model: the tool's parameters plus, for the heartbeat loop
 * (`heartbeat`), an optional boolean `request_heartbeat` (not added to `required`; the processor strips
 * it before execution). letta_v1_agent's loop has no heartbeats, so its models are not offered one.
 */
export function toolSchemaFor(def: ToolDefinition, heartbeat = true): ToolSchema {
  const params = isObj(def.parameters) ? def.parameters : {};
  const properties = isObj(params.properties) ? params.properties : {};
  const flag = { type: 'boolean', description: REQUEST_HEARTBEAT_DESCRIPTION };
  return {
    type: 'function',
    function: {
      name: def.name,
      description: def.description,
      parameters: {
        ...params,
        type: 'object',
        properties: heartbeat ? { ...properties, request_heartbeat: flag } : properties,
      },
    },
  };
}
