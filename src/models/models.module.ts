import { Module } from '@nestjs/common';
import { MODEL_RETRY_SLEEP, ModelsService } from './models.service';
import { realSleep } from './openai.provider';

@Module({
  // The retry sleep is a provider so a test module can override it and never really wait.
  providers: [ModelsService, { provide: MODEL_RETRY_SLEEP, useValue: realSleep }],
  exports: [ModelsService],
})
export class ModelsModule {}
