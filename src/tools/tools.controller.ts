import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Patch,
  Post,
  Put,
  Query,
} from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { validationFailed } from '../common/domain-error';
import { fitPage, oldestFirst, pageOfList } from '../common/list-page';
import { countProblem, readLimit } from '../core/limits';
import type { ValidationProblem } from '../core/rules/validate-tool-rules';
import { toToolResponse } from './tool-response.mapper';
import { ToolsService } from './tools.service';

const SEARCH_QUERY_MAX = 1000;

@Controller('v1/tools')
export class ToolsController {
  constructor(
    private readonly tools: ToolsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Letta's filters: `name` / `names`, `search` (a case-insensitive part of the name), `tool_ids`,
   * `tool_types`, `exclude_tool_types`, `return_only_letta_tools`; then its page parameters.
   */
  @Get()
  async list(
    @Tenant() tenant: string,
    @Query() query: Record<string, unknown>,
  ): Promise<Record<string, unknown>[]> {
    const problems: ValidationProblem[] = [];
    const texts = (...keys: string[]) => {
      const v = keys.flatMap((k) => [query[k]].flat()).filter((x) => x !== undefined && x !== '');
      const tooMany = countProblem(keys[0], v.length, 'max_filter_values', this.config.limits);
      if (tooMany) problems.push(tooMany);
      else if (v.some((x) => typeof x !== 'string'))
        problems.push({ path: keys[0], message: 'must be texts' });
      return v as string[];
    };
    const names = texts('names', 'name');
    const ids = texts('tool_ids');
    const types = texts('tool_types');
    const excluded = texts('exclude_tool_types');
    if (problems.length) throw validationFailed(problems, 'query is invalid');
    const part = typeof query.search === 'string' ? query.search.toLowerCase() : null;
    const lettaOnly = query.return_only_letta_tools === 'true';
    const found = oldestFirst(await this.tools.list(tenant), (t) => t.created_at)
      .filter((t) => names.length === 0 || names.includes(t.name))
      .filter((t) => part === null || t.name.toLowerCase().includes(part))
      .filter((t) => ids.length === 0 || ids.includes(t.id))
      .map(toToolResponse)
      .filter((t) => {
        const type = t.tool_type as string;
        if (types.length && !types.includes(type)) return false;
        return !excluded.includes(type) && (!lettaOnly || type.startsWith('letta_'));
      });
    // Letta's default: newest first (`order=desc` by created_at; its built-ins, made at its boot, last)
    return pageOfList(found as { id: string }[], query, this.config.limits, 'a tool', 'desc');
  }

  /** Letta's `POST /v1/tools/search`: tools whose name or description holds every word of the query. */
  @Post('search')
  @HttpCode(200)
  async search(@Tenant() tenant: string, @Body() body: unknown) {
    const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const query = b.query ?? '';
    const problems: ValidationProblem[] = [];
    if (typeof query !== 'string' || query.length > SEARCH_QUERY_MAX)
      problems.push({
        path: 'query',
        message: `must be a text of at most ${SEARCH_QUERY_MAX} characters`,
      });
    const limit = readLimit(
      typeof b.limit === 'string' ? NaN : b.limit, // a JSON number, as the request schema says
      50,
      'max_page_size',
      this.config.limits,
      problems,
    );
    if (problems.length || typeof query !== 'string') throw validationFailed(problems);
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    const found = (await this.tools.list(tenant))
      .map((t) => ({ t, text: `${t.name} ${t.description}`.toLowerCase() }))
      .filter(({ text }) => words.every((w) => text.includes(w)))
      .slice(0, limit)
      .map(({ t }) => ({
        tool: toToolResponse(t),
        combined_score: 1,
        fts_rank: null,
        vector_rank: null,
      }));
    return fitPage(found, this.config.limits.max_page_bytes);
  }

  @Post()
  @HttpCode(200) // as Letta answers
  async create(@Tenant() tenant: string, @Body() body: unknown): Promise<Record<string, unknown>> {
    return toToolResponse(await this.tools.create(tenant, body));
  }

  /** Letta's upsert: the tenant's http tool of that name is updated (same id), or created. */
  @Put()
  async upsert(@Tenant() tenant: string, @Body() body: unknown): Promise<Record<string, unknown>> {
    return toToolResponse(await this.tools.upsert(tenant, body));
  }

  /**
   * Letta's `POST /v1/tools/add-base-tools`: the built-ins always exist here, so it lists them;
   * idempotent (nothing is created, nothing changes).
   */
  @Post('add-base-tools')
  @HttpCode(200)
  async addBaseTools(@Tenant() tenant: string): Promise<Record<string, unknown>[]> {
    return (await this.tools.list(tenant)).filter((t) => t.kind === 'builtin').map(toToolResponse);
  }

  @Get(':id')
  async get(@Tenant() tenant: string, @Param('id') id: string): Promise<Record<string, unknown>> {
    return toToolResponse(await this.tools.get(tenant, id));
  }

  @Patch(':id')
  async update(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<Record<string, unknown>> {
    return toToolResponse(await this.tools.update(tenant, id, body));
  }

  @Delete(':id')
  @HttpCode(200)
  async delete(@Tenant() tenant: string, @Param('id') id: string): Promise<{ message: string }> {
    await this.tools.delete(tenant, id);
    return { message: `tool ${id} deleted` };
  }
}
