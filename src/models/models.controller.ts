import { Controller, Get, Query } from '@nestjs/common';
import { toLettaEmbeddingModel } from './embeddings/embedding-listing.mapper';
import { EmbeddingsService } from './embeddings/embeddings.service';
import { toLettaModel } from './model-listing.mapper';
import { ModelProvidersService } from './providers/model-providers.service';

/** Letta's model listing: `GET /v1/models/` (the models the operator's providers list) and `/v1/models/embedding`. */
@Controller('v1/models')
export class ModelsController {
  constructor(
    private readonly providers: ModelProvidersService,
    private readonly embeddingModels: EmbeddingsService,
  ) {}

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

  /** The operator's embedding models (`models.embeddings`); none configured: `[]`. */
  @Get('embedding')
  embeddings() {
    return this.embeddingModels.list().map(toLettaEmbeddingModel);
  }
}
