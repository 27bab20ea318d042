import { createHash } from 'node:crypto';
import type { ToolDefinition } from '../core/tools/tool-definition';

/** The `label` argument of Letta's v2 memory tools. */
const BLOCK_LABEL_PARAM = {
  type: 'string',
  description: 'Section of the memory to be edited, identified by its label.',
};

/** The built-in tools, declared in code (their handlers live in BuiltinToolHandlers). */
export const BUILTIN_TOOLS: readonly ToolDefinition[] = [
  {
    name: 'send_message',
    description: 'Sends a message to the human user.',
    parameters: {
      type: 'object',
      properties: {
        message: {
          type: 'string',
          description: 'Message contents. All unicode (including emojis) are supported.',
        },
      },
      required: ['message'],
    },
    safety: 'read_only',
    kind: 'builtin',
  },
  {
    name: 'core_memory_append',
    description: 'Append to the contents of core memory.',
    parameters: {
      type: 'object',
      properties: {
        label: { type: 'string', description: 'Section of the memory to be edited.' },
        content: { type: 'string', description: 'Content to write to the memory.' },
      },
      required: ['label', 'content'],
    },
    safety: 'side_effecting',
    kind: 'builtin',
  },
  {
    name: 'core_memory_replace',
    description:
      'Replace the contents of core memory. To delete memories, use an empty string for new_content.',
    parameters: {
      type: 'object',
      properties: {
        label: { type: 'string', description: 'Section of the memory to be edited.' },
        old_content: { type: 'string', description: 'String to replace. Must be an exact match.' },
        new_content: { type: 'string', description: 'Content to write to the memory.' },
      },
      required: ['label', 'old_content', 'new_content'],
    },
    safety: 'side_effecting',
    kind: 'builtin',
  },
  // Letta's v2 memory tools (memgpt_v2_agent, letta_v1_agent), with its descriptions
  {
    name: 'memory_replace',
    description:
      'The memory_replace command allows you to replace a specific string in a memory block with a new string. This is used for making precise edits. Do NOT attempt to replace long strings, e.g. do not attempt to replace the entire contents of a memory block with a new string.',
    parameters: {
      type: 'object',
      properties: {
        label: BLOCK_LABEL_PARAM,
        old_string: {
          type: 'string',
          description:
            'The text to replace (must match exactly, including whitespace and indentation).',
        },
        new_string: {
          type: 'string',
          description:
            'The new text to insert in place of the old text. Do not include line number prefixes.',
        },
      },
      required: ['label', 'old_string', 'new_string'],
    },
    safety: 'side_effecting',
    kind: 'builtin',
  },
  {
    name: 'memory_insert',
    description:
      'The memory_insert command allows you to insert text at a specific location in a memory block.',
    parameters: {
      type: 'object',
      properties: {
        label: BLOCK_LABEL_PARAM,
        new_string: {
          type: 'string',
          description: 'The text to insert. Do not include line number prefixes.',
        },
        insert_line: {
          type: 'integer',
          description:
            'The line number after which to insert the text (0 for beginning of file). Defaults to -1 (end of the file).',
        },
      },
      required: ['label', 'new_string'],
    },
    safety: 'side_effecting',
    kind: 'builtin',
  },
  {
    name: 'conversation_search',
    description: 'Search prior conversation history using case-insensitive string matching.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'String to search for.' },
        limit: { type: 'integer', description: 'Maximum number of results to return.', minimum: 1 },
      },
      required: ['query'],
    },
    safety: 'read_only',
    kind: 'builtin',
  },
  {
    name: 'archival_memory_insert',
    description:
      'Add information to long-term archival memory for later retrieval. Store self-contained facts or summaries; add tags to find them later.',
    parameters: {
      type: 'object',
      properties: {
        content: {
          type: 'string',
          description: 'The information to store. Should be clear and self-contained.',
        },
        tags: {
          type: 'array',
          items: { type: 'string' },
          description: 'Optional category tags (e.g. ["meetings", "project-updates"]).',
        },
      },
      required: ['content'],
    },
    safety: 'side_effecting',
    kind: 'builtin',
  },
  {
    name: 'archival_memory_search',
    description:
      'Search archival memory (by meaning when it has an embedding model, else by words; best first) for information stored earlier.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What you are looking for.' },
        tags: {
          type: 'array',
          items: { type: 'string' },
          description: 'Only memories with these tags (see tag_match_mode).',
        },
        tag_match_mode: {
          type: 'string',
          enum: ['any', 'all'],
          description: '"any": memories with any of the tags; "all": with all of them.',
        },
        top_k: {
          type: 'integer',
          minimum: 1,
          description: 'Maximum number of results (default 10).',
        },
        start_datetime: {
          type: 'string',
          description: 'Only memories created at or after this time (ISO 8601).',
        },
        end_datetime: {
          type: 'string',
          description: 'Only memories created at or before this time (ISO 8601).',
        },
      },
      required: ['query'],
    },
    safety: 'read_only',
    kind: 'builtin',
  },
  // Letta's web built-ins, so agents declared by Letta's clients (Letta Code asks for both) are valid;
  // this server makes no outbound web requests of its own, so a call answers the model with an error
  {
    name: 'web_search',
    description: 'Search the web for information.',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string', description: 'The search query.' } },
      required: ['query'],
    },
    safety: 'read_only',
    kind: 'builtin',
  },
  {
    name: 'fetch_webpage',
    description: 'Fetch a webpage and convert it to text.',
    parameters: {
      type: 'object',
      properties: { url: { type: 'string', description: 'The URL of the webpage.' } },
      required: ['url'],
    },
    safety: 'read_only',
    kind: 'builtin',
  },
];

/** The built-ins that edit the agent's memory blocks: after one ran, the agent's blocks are read again. */
export const MEMORY_EDIT_TOOLS: ReadonlySet<string> = new Set([
  'core_memory_append',
  'core_memory_replace',
  'memory_replace',
  'memory_insert',
]);

/** The built-ins that only exist so Letta's clients can name them: a call is an error return. */
export const UNAVAILABLE_BUILTINS = ['web_search', 'fetch_webpage'] as const;

export const BUILTIN_TOOL_NAMES: ReadonlySet<string> = new Set(BUILTIN_TOOLS.map((t) => t.name));

/** Letta's tool_type for each built-in. */
export const BUILTIN_TOOL_TYPES: Record<string, string> = {
  send_message: 'letta_core',
  conversation_search: 'letta_core',
  core_memory_append: 'letta_memory_core',
  core_memory_replace: 'letta_memory_core',
  memory_replace: 'letta_sleeptime_core',
  memory_insert: 'letta_sleeptime_core',
  archival_memory_insert: 'letta_core',
  archival_memory_search: 'letta_core',
  web_search: 'letta_builtin',
  fetch_webpage: 'letta_builtin',
};

/** A stable `tool-<uuid>` per built-in name, the same on every server and restart. */
export function builtinToolId(name: string): string {
  const h = createHash('sha1').update(`builtin-tool:${name}`).digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `tool-${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
