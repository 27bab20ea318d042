import { badRequest, DomainError } from '../common/domain-error';
import { LlmConfig } from './model-provider';

export const MODEL_PROVIDER_TYPES = ['openai', 'scripted'] as const;
export type ModelProviderType = (typeof MODEL_PROVIDER_TYPES)[number];

export const isModelProviderType = (v: unknown): v is ModelProviderType =>
  typeof v === 'string' && (MODEL_PROVIDER_TYPES as readonly string[]).includes(v);

export const DEFAULT_CONTEXT_WINDOW: Record<ModelProviderType, number> = {
  openai: 128_000,
  scripted: 32_000,
};

export const unknownProvider = (type: unknown): DomainError =>
  badRequest(
    'UNKNOWN_MODEL_PROVIDER',
    `unknown model provider ${JSON.stringify(type)}; known: ${MODEL_PROVIDER_TYPES.join(', ')}`,
    { model_endpoint_type: type ?? null, known: [...MODEL_PROVIDER_TYPES] },
  );

/**
 * A Letta model handle `provider/model` → llm_config. `openai/gpt-4o-mini` points at the configured
 * OpenAI base URL; `scripted/<anything>` is the offline provider. The handle is kept on the config.
 */
export function resolveModelHandle(handle: string, openaiBaseUrl: string): LlmConfig {
  const slash = typeof handle === 'string' ? handle.indexOf('/') : -1;
  if (slash <= 0 || slash === handle.length - 1) {
    throw badRequest(
      'INVALID_MODEL_HANDLE',
      `model must be a handle "provider/model" (e.g. "openai/gpt-4o-mini" or "scripted/demo"), got ${JSON.stringify(handle)}`,
      { model: handle },
    );
  }
  const provider = handle.slice(0, slash);
  const model = handle.slice(slash + 1);
  if (!isModelProviderType(provider)) throw unknownProvider(provider);
  switch (provider) {
    case 'openai':
      return {
        model,
        model_endpoint_type: 'openai',
        model_endpoint: openaiBaseUrl,
        context_window: DEFAULT_CONTEXT_WINDOW.openai,
        handle,
      };
    case 'scripted':
      return {
        model,
        model_endpoint_type: 'scripted',
        model_endpoint: null,
        context_window: DEFAULT_CONTEXT_WINDOW.scripted,
        handle,
      };
  }
}
