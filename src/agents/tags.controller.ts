import { Controller, Get, Inject, Query } from '@nestjs/common';
import { Tenant } from '../auth/tenant.guard';
import { validationFailed } from '../common/domain-error';
import { AgentsRepository } from './agents.repository';

const TEXT_MAX = 200;

/** Letta's `GET /v1/tags/`: the tenant's agent tags, by name (`query_text` / `name` filter, `after`, `limit`). */
@Controller('v1/tags')
export class TagsController {
  constructor(@Inject(AgentsRepository) private readonly agents: AgentsRepository) {}

  @Get()
  list(@Tenant() tenant: string, @Query() query: Record<string, unknown>): Promise<string[]> {
    const text = query.query_text ?? query.name;
    const limit = query.limit === undefined ? 50 : Number(query.limit);
    const order = query.order ?? 'asc';
    if (
      (text !== undefined && (typeof text !== 'string' || text.length > TEXT_MAX)) ||
      !Number.isInteger(limit) ||
      limit < 1 ||
      limit > 1000 ||
      (order !== 'asc' && order !== 'desc')
    ) {
      throw validationFailed(
        [
          {
            path: 'query',
            message: `query_text ≤ ${TEXT_MAX} characters, limit 1–1000, order asc|desc`,
          },
        ],
        'query is invalid',
      );
    }
    return this.agents.listTags(tenant, {
      text: text,
      after: typeof query.after === 'string' ? query.after : undefined,
      limit,
      order,
    });
  }
}
