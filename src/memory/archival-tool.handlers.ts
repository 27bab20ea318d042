import { validationFailed } from '../common/domain-error';
import { parsePassageInput } from '../core/memory/passage-input';
import type { BuiltinToolHandlers } from '../tools/builtin-tool-handlers';
import { toArchivalResult } from './archival-response.mapper';
import type { ArchivalService } from './archival.service';

/** archival_memory_insert / archival_memory_search, with Letta's arguments and answers. */
export function registerArchivalTools(
  handlers: BuiltinToolHandlers,
  archival: ArchivalService,
  limits: Parameters<typeof parsePassageInput>[1],
): void {
  handlers.register('archival_memory_insert', async (args, ctx) => {
    const { input, problems } = parsePassageInput(args, limits, '', 'content');
    if (!input) throw validationFailed(problems, 'archival_memory_insert');
    await archival.insertForAgent(ctx.tenantId, ctx.agentId, input);
    return null;
  });
  handlers.register('archival_memory_search', async (args, ctx) => {
    const results = await archival.searchAgent(ctx.tenantId, ctx.agentId, args);
    return JSON.stringify(results.map(toArchivalResult));
  });
}
