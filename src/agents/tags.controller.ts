import { Controller, Get, Inject, Query } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { validationFailed } from '../common/domain-error';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { readLimit } from '../core/limits';
import type { ValidationProblem } from '../core/rules/validate-tool-rules';
import { AgentsRepository } from './agents.repository';

const TEXT_MAX = 200;

/** Letta's `GET /v1/tags/`: the tenant's agent tags, by name (`query_text` / `name` filter, `after`, `limit`). */
@Controller('v1/tags')
export class TagsController {
  constructor(
    @Inject(AgentsRepository) private readonly agents: AgentsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get()
  list(@Tenant() tenant: string, @Query() query: Record<string, unknown>): Promise<string[]> {
    const text = query.query_text ?? query.name;
    const order = query.order ?? 'asc';
    const problems: ValidationProblem[] = [];
    const limit = readLimit(query.limit, 50, 'max_page_size', this.config.limits, problems);
    if (text !== undefined && (typeof text !== 'string' || text.length > TEXT_MAX))
      problems.push({
        path: 'query_text',
        message: `must be a text of at most ${TEXT_MAX} characters`,
      });
    if (order !== 'asc' && order !== 'desc')
      problems.push({ path: 'order', message: 'must be "asc" or "desc"' });
    if (problems.length || (text !== undefined && typeof text !== 'string'))
      throw validationFailed(problems, 'query is invalid');
    return this.agents.listTags(tenant, {
      text: text,
      after: typeof query.after === 'string' ? query.after : undefined,
      limit,
      order: order as 'asc' | 'desc',
    });
  }
}
