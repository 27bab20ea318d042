import {
  Body,
  Controller,
  Get,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  UploadedFile,
  UseInterceptors,
} from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import { Tenant } from '../auth/tenant.guard';
import { badRequest, validationFailed, ValidationProblem } from '../common/domain-error';
import { assertPrefixedId } from '../common/ids';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { AgentFileService, ImportOptions } from './agent-file.service';

type Json = Record<string, unknown>;

/** Letta's agent file routes: `GET /v1/agents/{id}/export`, `POST /v1/agents/import` (multipart). */
@Controller('v1/agents')
export class AgentFileController {
  constructor(
    private readonly files: AgentFileService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get(':id/export')
  export(@Tenant() tenant: string, @Param('id') id: string, @Query() query: Json): Promise<Json> {
    assertPrefixedId('agent', 'agent', id);
    const problems: ValidationProblem[] = [];
    if (query.use_legacy_format === 'true')
      problems.push({ path: 'use_legacy_format', message: 'the legacy format is not supported' });
    const conversationId = query.conversation_id;
    if (conversationId !== undefined && typeof conversationId !== 'string')
      problems.push({ path: 'conversation_id', message: 'must be a conversation id' });
    if (problems.length) throw validationFailed(problems);
    return this.files.export(tenant, [id], {
      scrubMessages: flag(query.scrub_messages, 'scrub_messages') ?? false,
      conversationId: (conversationId as string | undefined) ?? null,
    });
  }

  /**
   * Several agents as one file (ours: Letta's routes export one agent, its exporter several for a
   * group); `{agent_ids, scrub_messages?}`, at most `agent_files.max_agents`.
   */
  @Post('export')
  @HttpCode(200)
  exportMany(@Tenant() tenant: string, @Body() body: unknown): Promise<Json> {
    const b = (
      typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}
    ) as Json;
    const ids = b.agent_ids;
    const max = this.config.agent_files.max_agents;
    const problems: ValidationProblem[] = [];
    if (!Array.isArray(ids) || ids.length === 0 || ids.some((x) => typeof x !== 'string'))
      problems.push({ path: 'agent_ids', message: 'must be a non-empty list of agent ids' });
    else if (ids.length > max)
      problems.push({
        path: 'agent_ids',
        message: `has ${ids.length} items; at most ${max} (agent_files.max_agents)`,
        limit: 'agent_files.max_agents',
      });
    if (problems.length) throw validationFailed(problems);
    const list = [...new Set(ids as string[])];
    for (const id of list) assertPrefixedId('agent', 'agent', id);
    return this.files.export(tenant, list, {
      scrubMessages: flag(b.scrub_messages, 'scrub_messages') ?? false,
      conversationId: null,
    });
  }

  @Post('import')
  @HttpCode(200)
  @UseInterceptors(FileInterceptor('file'))
  import(
    @Tenant() tenant: string,
    @UploadedFile() file: { buffer: Buffer } | undefined,
    @Body() body: Json | undefined,
  ): Promise<{ agent_ids: string[] }> {
    if (!file)
      throw badRequest('AGENT_FILE_REQUIRED', 'send the agent file as the multipart field `file`');
    return this.files.import(tenant, file.buffer, importOptions(body ?? {}));
  }
}

/** A form or query boolean ('true' / 'false'); undefined when absent. */
function flag(v: unknown, path: string): boolean | undefined {
  if (v === undefined || v === '') return undefined;
  if (v === 'true' || v === true) return true;
  if (v === 'false' || v === false) return false;
  throw validationFailed([{ path, message: 'must be true or false' }]);
}

/** Letta's import form fields (new names first, deprecated ones as fallbacks). */
function importOptions(b: Json): ImportOptions {
  const text = (k: string): string | null => {
    const v = b[k];
    if (v === undefined || v === null || v === '') return null;
    if (typeof v !== 'string' || v.length > 1000)
      throw validationFailed([{ path: k, message: 'must be a text of at most 1000 characters' }]);
    return v;
  };
  let secrets: Json | null = null;
  const rawSecrets = text('secrets') ?? text('env_vars_json');
  if (rawSecrets !== null) {
    try {
      secrets = JSON.parse(rawSecrets) as Json;
    } catch {
      secrets = null;
    }
    if (typeof secrets !== 'object' || secrets === null || Array.isArray(secrets))
      throw validationFailed([
        { path: 'secrets', message: 'must be a JSON object of NAME → value' },
      ]);
  }
  return {
    name: text('name') ?? text('override_name'),
    model: text('model') ?? text('override_model_handle'),
    stripMessages: flag(b.strip_messages, 'strip_messages') ?? false,
    // Letta's default appends "_copy"; its SDK sends the field only when set
    appendCopySuffix: flag(b.append_copy_suffix, 'append_copy_suffix') ?? false,
    secrets,
  };
}
