import { Inject, Injectable, Optional } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ToolDefinition } from '../core/tools/tool-definition';
import { isModelProviderType, resolveModelHandle, unknownProvider } from './model-handles';
import { ChatMessage, LlmConfig, ModelProvider, ToolSchema } from './model-provider';
import { OpenAiProvider, SleepFn } from './openai.provider';
import { ScriptedProvider } from './scripted.provider';
import { countTextTokens, countTokens } from './token-count';
import { toolSchemaFor } from './tool-schema';

/** Optional override of the retry sleep (tests that exercise retries through the app). */
export const MODEL_RETRY_SLEEP = Symbol('MODEL_RETRY_SLEEP');

/** Picks the provider for an agent's llm_config, and the small helpers the processor needs around it. */
@Injectable()
export class ModelsService {
  private readonly openai: OpenAiProvider;
  private readonly scripted = new ScriptedProvider();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Optional() @Inject(MODEL_RETRY_SLEEP) sleep?: SleepFn,
  ) {
    const o = config.models.openai;
    this.openai = new OpenAiProvider({
      apiKey: o.api_key,
      baseUrl: o.base_url,
      timeoutMs: o.timeout_seconds * 1000,
      maxRetries: o.max_retries,
      sleep,
    });
  }

  /** 400 UNKNOWN_MODEL_PROVIDER for an endpoint type we do not serve. */
  providerFor(llmConfig: LlmConfig): ModelProvider {
    const type = llmConfig?.model_endpoint_type;
    if (!isModelProviderType(type)) throw unknownProvider(type);
    switch (type) {
      case 'openai':
        return this.openai;
      case 'scripted':
        return this.scripted;
    }
  }

  /** `openai/gpt-4o-mini` → llm_config; 400 INVALID_MODEL_HANDLE / UNKNOWN_MODEL_PROVIDER. */
  resolveHandle(handle: string): LlmConfig {
    return resolveModelHandle(handle, this.config.models.openai.base_url);
  }

  toolSchemaFor(def: ToolDefinition): ToolSchema {
    return toolSchemaFor(def);
  }

  /** Approximate tokens (chars/4) of a text or a message list. */
  countTokens(input: string | readonly ChatMessage[]): number {
    return typeof input === 'string' ? countTextTokens(input) : countTokens(input);
  }
}
