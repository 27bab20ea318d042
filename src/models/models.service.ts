import { Inject, Injectable, Optional } from '@nestjs/common';
import { badRequest } from '../common/domain-error';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ToolDefinition } from '../core/tools/tool-definition';
import { ChatMessage, LlmConfig, ModelError, ModelProvider, ToolSchema } from './model-provider';
import { ModelRateLimiter } from './model-rate.limiter';
import { OpenAiProvider, OpenAiProviderOptions, SleepFn } from './openai.provider';
import { ModelProvidersService } from './providers/model-providers.service';
import { ProviderInfo } from './providers/provider-catalog';
import { ScriptedProvider } from './scripted.provider';
import { countTextTokens, countTokens } from './token-count';
import { toolSchemaFor } from './tool-schema';

/** Optional override of the retry sleep (tests that exercise retries through the app). */
export const MODEL_RETRY_SLEEP = Symbol('MODEL_RETRY_SLEEP');

/** Reads a tenant's secret by name (the tenant secret store); a provider keyed by a tenant secret uses it. */
export const TENANT_SECRET_READER = Symbol('TENANT_SECRET_READER');
export type TenantSecretReader = (tenantId: string, name: string) => Promise<string | undefined>;

/** Picks the provider for an agent's llm_config, and the small helpers the processor needs around it. */
@Injectable()
export class ModelsService {
  /** One client per provider keyed by the operator (or by nothing); tenant-keyed ones are made per call. */
  private readonly clients = new Map<string, ModelProvider>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly providers: ModelProvidersService,
    private readonly rates: ModelRateLimiter,
    @Optional() @Inject(MODEL_RETRY_SLEEP) private readonly sleep?: SleepFn,
    @Optional() @Inject(TENANT_SECRET_READER) private readonly readSecret?: TenantSecretReader,
  ) {
    this.clients.set('scripted', new ScriptedProvider());
  }

  /**
   * The client for an agent's llm_config: always the configured provider's base URL and key, whatever
   * endpoint the stored config names. 400 when it names no configured provider.
   */
  providerFor(llmConfig: LlmConfig, tenantId: string): ModelProvider {
    const r = this.providers.forCall(llmConfig);
    if ('error' in r)
      throw badRequest(
        r.path === 'llm_config.model_endpoint'
          ? 'MODEL_ENDPOINT_NOT_ALLOWED'
          : 'UNKNOWN_MODEL_PROVIDER',
        `${r.path} ${r.error}`,
        { path: r.path },
      );
    const p = r.ok;
    if (p.key.from === 'tenant_secret') return this.tenantKeyed(p, p.key.secret, tenantId);
    // a bounded provider's calls wait in their tenant's turn: a client of the caller's own
    const admit = this.rates.admitterFor(p.name, tenantId);
    if (admit) return new OpenAiProvider({ ...this.options(p, this.operatorKey(p)), admit });
    let client = this.clients.get(p.name);
    if (!client) {
      client = new OpenAiProvider(this.options(p, this.operatorKey(p)));
      this.clients.set(p.name, client);
    }
    return client;
  }

  acceptsImages(llmConfig: LlmConfig): boolean {
    return this.providers.acceptsImages(llmConfig);
  }

  fromHandle(handle: string): { ok: LlmConfig } | { error: string } {
    return this.providers.fromHandle(handle);
  }

  /** The provider's key is the calling tenant's secret: read at each call, never kept. */
  private tenantKeyed(p: ProviderInfo, secret: string, tenantId: string): ModelProvider {
    return {
      complete: async (req) => {
        const key = await this.readSecret?.(tenantId, secret);
        if (key === undefined)
          throw new ModelError(
            'llm_api_error',
            `provider "${p.name}" takes its key from the tenant secret ${secret}, which is not set`,
          );
        return new OpenAiProvider(this.options(p, key)).complete(req);
      },
    };
  }

  private operatorKey(p: ProviderInfo): string | null {
    if (p.name === 'openai') return this.config.models.openai.api_key;
    return this.config.models.providers.find((c) => c.name === p.name)?.api_key ?? null;
  }

  private options(p: ProviderInfo, apiKey: string | null): OpenAiProviderOptions {
    return {
      apiKey,
      baseUrl: p.base_url as string,
      timeoutMs: p.timeout_seconds * 1000,
      maxRetries: p.max_retries,
      bounds: this.config.models,
      sleep: this.sleep,
    };
  }

  toolSchemaFor(def: ToolDefinition, heartbeat = true): ToolSchema {
    return toolSchemaFor(def, heartbeat);
  }

  /** Approximate tokens (chars/4) of a text or a message list. */
  countTokens(input: string | readonly ChatMessage[]): number {
    return typeof input === 'string' ? countTextTokens(input) : countTokens(input);
  }
}
