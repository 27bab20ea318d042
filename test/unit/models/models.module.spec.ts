import { Test } from '@nestjs/testing';
import { loadConfig } from '../../../src/config/app-config';
import { CoreProvidersModule } from '../../../src/common/core-providers.module';
import { ConfigModule } from '../../../src/config/config.module';
import { ModelsModule } from '../../../src/models/models.module';
import { MODEL_RETRY_SLEEP, ModelsService } from '../../../src/models/models.service';
import { ModelProvidersService } from '../../../src/models/providers/model-providers.service';
import { startFakeModelServer } from '../../support/fake-model-server';

describe('ModelsModule', () => {
  it('provides ModelsService wired to the configuration (retry sleep overridable)', async () => {
    const fake = await startFakeModelServer();
    const sleeps: number[] = [];
    const config = loadConfig(
      {},
      { models: { openai: { base_url: fake.baseUrl, api_key: 'sk-module' } } },
    );
    const mod = await Test.createTestingModule({
      imports: [ConfigModule.forRoot(config), CoreProvidersModule, ModelsModule],
    })
      .overrideProvider(MODEL_RETRY_SLEEP)
      .useValue((ms: number) => {
        sleeps.push(ms);
        return Promise.resolve();
      })
      .compile();
    try {
      const models = mod.get(ModelsService);
      const h = mod.get(ModelProvidersService).fromHandle('openai/gpt-4o-mini');
      if (!('ok' in h)) throw new Error(h.error);
      const llm = h.ok;
      fake.push({ status: 503, headers: { 'retry-after': '2' } }, { content: 'hi' });
      const r = await models.providerFor(llm, 'default').complete({
        llmConfig: llm,
        messages: [{ role: 'user', content: 'hello' }],
        tools: [],
        toolChoice: 'none',
        stream: false,
        batchStep: 0,
      });
      expect(r.content).toBe('hi');
      expect(sleeps).toEqual([2000]);
      expect(fake.requests[1].headers.authorization).toBe('Bearer sk-module');
      expect(fake.requests[1].model).toBe('gpt-4o-mini');
    } finally {
      await mod.close();
      await fake.close();
    }
  });
});
