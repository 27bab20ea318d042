import { Controller, Get, Query } from '@nestjs/common';
import { toLettaModel } from './model-listing.mapper';
import { ModelProvidersService } from './providers/model-providers.service';

/** Letta's model listing: `GET /v1/models/` (the models the operator's providers list) and `/v1/models/embedding`. */
@Controller('v1/models')
export class ModelsController {
  constructor(private readonly providers: ModelProvidersService) {}

  @Get()
  list(@Query() query: Record<string, unknown>) {
    const wanted = (v: unknown, actual: string) => v === undefined || v === '' || v === actual;
    return this.providers
      .listModels()
      .map(toLettaModel)
      .filter(
        (m) =>
          wanted(query.provider_name, m.provider_name) &&
          wanted(query.provider_type, m.provider_type),
      );
  }

  /** No embedding provider is configurable yet: Letta's shape, empty. */
  @Get('embedding')
  embeddings(): unknown[] {
    return [];
  }
}
