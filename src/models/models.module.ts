import { Module } from '@nestjs/common';
import { EmbeddingsService } from './embeddings/embeddings.service';
import { ModelsController } from './models.controller';
import { ModelRateLimiter } from './model-rate.limiter';
import { MODEL_RETRY_SLEEP, ModelsService } from './models.service';
import { realSleep } from './openai.provider';
import { ModelProvidersService } from './providers/model-providers.service';

@Module({
  controllers: [ModelsController],
  // The retry sleep is a provider so a test module can override it and never really wait.
  providers: [
    ModelsService,
    ModelProvidersService,
    ModelRateLimiter,
    EmbeddingsService,
    { provide: MODEL_RETRY_SLEEP, useValue: realSleep },
  ],
  exports: [ModelsService, ModelProvidersService, EmbeddingsService],
})
export class ModelsModule {}
