import { memoryInsert, memoryReplace } from '../core/memory/memory-edits';
import type { BuiltinToolHandlers } from '../tools/builtin-tool-handlers';
import type { AgentsService } from './agents.service';

const text = (args: Record<string, unknown>, key: string): string => {
  const v = args[key];
  if (typeof v !== 'string') throw new Error(`argument "${key}" must be a string`);
  // the model's text: PostgreSQL cannot store a NUL, so it is the model's error, not the database's
  if (v.includes('\u0000')) throw new Error(`argument "${key}" must not contain NUL characters`);
  return v;
};

/**
 * core_memory_append / core_memory_replace and memory_insert / memory_replace, with Letta's semantics,
 * through AgentsService (read-only blocks and block limits are checked there, for all four).
 */
export function registerMemoryTools(handlers: BuiltinToolHandlers, agents: AgentsService): void {
  handlers.register('core_memory_append', async (args, ctx) => {
    const label = text(args, 'label');
    const content = text(args, 'content');
    await agents.editMemoryBlock(ctx.tenantId, ctx.agentId, label, (v) =>
      v ? `${v}\n${content}` : content,
    );
    return null;
  });
  handlers.register('core_memory_replace', async (args, ctx) => {
    const label = text(args, 'label');
    const oldContent = text(args, 'old_content');
    const newContent = text(args, 'new_content');
    if (oldContent === '') throw new Error('old_content must not be empty');
    await agents.editMemoryBlock(ctx.tenantId, ctx.agentId, label, (v) => {
      if (!v.includes(oldContent))
        throw new Error(`Old content '${oldContent}' not found in memory block '${label}'`);
      return v.split(oldContent).join(newContent);
    });
    return null;
  });
  // Letta's executor answers these two with the block's new value
  handlers.register('memory_replace', async (args, ctx) => {
    const label = text(args, 'label');
    const oldString = text(args, 'old_string');
    const newString = text(args, 'new_string');
    const block = await agents.editMemoryBlock(ctx.tenantId, ctx.agentId, label, (v) =>
      memoryReplace(v, label, oldString, newString),
    );
    return block.value;
  });
  handlers.register('memory_insert', async (args, ctx) => {
    const label = text(args, 'label');
    const newString = text(args, 'new_string');
    const line = args.insert_line ?? -1;
    if (typeof line !== 'number' || !Number.isInteger(line))
      throw new Error('argument "insert_line" must be an integer');
    const block = await agents.editMemoryBlock(ctx.tenantId, ctx.agentId, label, (v) =>
      memoryInsert(v, newString, line),
    );
    return block.value;
  });
}
