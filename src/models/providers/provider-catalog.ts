import type { AppConfig, ModelProviderConfig } from '../../config/app-config';
import type { LlmConfig } from '../model-provider';

/** A configured provider as the rest of the app sees it (never its key). */
export interface ProviderInfo {
  name: string;
  type: 'openai' | 'scripted';
  /** null for the offline `scripted` provider. */
  base_url: string | null;
  /** Where its key comes from: the operator's configuration, the calling tenant's secret, or none. */
  key: { from: 'operator' } | { from: 'tenant_secret'; secret: string } | { from: 'none' };
  /** Model names the operator lists (any other name is passed through as well). */
  models: string[];
  context_window: number;
  timeout_seconds: number;
  max_retries: number;
  /** Models that accept images: names, or prefixes ending in `*`. */
  vision_models: string[];
  /** Calls a minute from this instance, shared fairly between tenants (ModelRateLimiter); 0 = no bound. */
  requests_per_minute: number;
}

/** One listable model: what a models API shows per configured provider and model. */
export interface ModelListing {
  handle: string;
  provider_name: string;
  model: string;
  model_endpoint_type: ProviderInfo['type'];
  model_endpoint: string | null;
  context_window: number;
}

export type Resolved<T> = { ok: T } | { path: string; error: string };

const SCRIPTED: ProviderInfo = {
  name: 'scripted',
  type: 'scripted',
  base_url: null,
  key: { from: 'none' },
  models: ['default'],
  context_window: 32_000,
  timeout_seconds: 60,
  max_retries: 0,
  vision_models: [],
  requests_per_minute: 0,
};

/** Base URLs compare without trailing slashes and with URL normalisation (case of the host, default port). */
export function sameBaseUrl(a: string, b: string): boolean {
  const norm = (u: string) => {
    try {
      return new URL(u).href.replace(/\/+$/, '');
    } catch {
      return u.replace(/\/+$/, '');
    }
  };
  return norm(a) === norm(b);
}

/**
 * The operator's model providers: `openai` (from `models.openai`), `scripted`, and `models.providers`.
 * An agent names a provider (handle `provider/model`, or llm_config `provider_name`), or a
 * `model_endpoint` equal to a provider's base URL; no other endpoint is ever called. Pure: built from
 * the configuration, no I/O.
 */
export class ProviderCatalog {
  private readonly byName = new Map<string, ProviderInfo>();

  constructor(models: AppConfig['models']) {
    const o = models.openai;
    const openai: ProviderInfo = {
      name: 'openai',
      type: 'openai',
      base_url: o.base_url,
      key: o.api_key ? { from: 'operator' } : { from: 'none' },
      models: [],
      context_window: 128_000,
      timeout_seconds: o.timeout_seconds,
      max_retries: o.max_retries,
      vision_models: o.vision_models,
      requests_per_minute: o.requests_per_minute,
    };
    for (const p of [openai, SCRIPTED, ...models.providers.map(fromConfig)])
      this.byName.set(p.name, p);
  }

  /** Every configured provider, `openai` and `scripted` first. */
  list(): ProviderInfo[] {
    return [...this.byName.values()];
  }

  /** The models the operator lists, one per provider and model (a models API shows these). */
  listModels(): ModelListing[] {
    return this.list().flatMap((p) => p.models.map((m) => this.toListing(p, m)));
  }

  get(name: string): ProviderInfo | undefined {
    return this.byName.get(name);
  }

  /** `myproxy/llama-3` → the llm_config of that provider and model. */
  fromHandle(handle: string): Resolved<LlmConfig> {
    const slash = handle.indexOf('/');
    if (slash <= 0 || slash === handle.length - 1)
      return {
        path: 'model',
        error: `must be a handle "provider/model" (e.g. "openai/gpt-4o-mini"); providers: ${this.names()}`,
      };
    const p = this.byName.get(handle.slice(0, slash));
    if (!p)
      return {
        path: 'model',
        error: `unknown provider "${handle.slice(0, slash)}"; configured: ${this.names()}`,
      };
    const { provider_name: _p, handle: _h, ...config } = this.toListing(p, handle.slice(slash + 1));
    return { ok: this.stamp(config, p) };
  }

  /**
   * Pins an llm_config to a configured provider: by `provider_name`, else by `model_endpoint` (which must
   * equal that provider's base URL), else the provider named like `model_endpoint_type`. The result always
   * carries the provider's own name and base URL.
   */
  resolve(config: LlmConfig): Resolved<LlmConfig> {
    const type = config.model_endpoint_type;
    const endpoint = config.model_endpoint ?? null;
    const named = config.provider_name;
    let p: ProviderInfo | undefined;
    if (named !== undefined && named !== null) {
      if (typeof named !== 'string' || !(p = this.byName.get(named)))
        return {
          path: 'llm_config.provider_name',
          error: `unknown provider ${JSON.stringify(named)}; configured: ${this.names()}`,
        };
    } else if (endpoint !== null) {
      p = this.list().find((c) => c.base_url !== null && sameBaseUrl(c.base_url, endpoint));
      if (!p) return this.foreignEndpoint();
    } else {
      p = this.list().find((c) => c.name === type) ?? this.list().find((c) => c.type === type);
      if (!p)
        return {
          path: 'llm_config.model_endpoint_type',
          error: `must be one of openai, scripted, got ${JSON.stringify(type)}`,
        };
    }
    if (type !== undefined && type !== p.type)
      return {
        path: 'llm_config.model_endpoint_type',
        error: `provider "${p.name}" is of type ${p.type}, got ${JSON.stringify(type)}`,
      };
    if (endpoint !== null && (p.base_url === null || !sameBaseUrl(p.base_url, endpoint)))
      return this.foreignEndpoint();
    return { ok: this.stamp(config, p) };
  }

  /**
   * The provider a stored llm_config calls: its `provider_name` when set (the URL called is always the
   * provider's base URL, so a stale stored endpoint cannot redirect it), else as `resolve` decides.
   */
  forCall(config: LlmConfig): Resolved<ProviderInfo> {
    const named =
      typeof config.provider_name === 'string' ? this.byName.get(config.provider_name) : undefined;
    if (named)
      return named.type === config.model_endpoint_type ? { ok: named } : this.foreignEndpoint();
    const r = this.resolve(config);
    return 'ok' in r ? { ok: this.byName.get(r.ok.provider_name as string)! } : r;
  }

  /** Whether the model a stored llm_config calls accepts image content (its provider's `vision_models`). */
  acceptsImages(config: LlmConfig): boolean {
    const r = this.forCall(config);
    if ('error' in r) return false;
    return r.ok.vision_models.some((v) =>
      v.endsWith('*') ? config.model.startsWith(v.slice(0, -1)) : v === config.model,
    );
  }

  private foreignEndpoint(): { path: string; error: string } {
    return {
      path: 'llm_config.model_endpoint',
      error:
        'is not a configured provider base URL: model endpoints belong to the operator; pick a provider ' +
        `(${this.names()}) as model "provider/model" or llm_config.provider_name`,
    };
  }

  private stamp(config: LlmConfig, p: ProviderInfo): LlmConfig {
    return {
      ...config,
      model_endpoint_type: p.type,
      model_endpoint: p.base_url,
      provider_name: p.name,
      handle: `${p.name}/${config.model}`,
    };
  }

  private toListing(p: ProviderInfo, model: string): ModelListing {
    return {
      handle: `${p.name}/${model}`,
      provider_name: p.name,
      model,
      model_endpoint_type: p.type,
      model_endpoint: p.base_url,
      context_window: p.context_window,
    };
  }

  private names(): string {
    return [...this.byName.keys()].join(', ');
  }
}

function fromConfig(c: ModelProviderConfig): ProviderInfo {
  return {
    name: c.name,
    type: c.type,
    base_url: c.base_url,
    key: c.api_key_secret
      ? { from: 'tenant_secret', secret: c.api_key_secret }
      : c.api_key
        ? { from: 'operator' }
        : { from: 'none' },
    models: c.models,
    context_window: c.context_window,
    timeout_seconds: c.timeout_seconds,
    max_retries: c.max_retries,
    vision_models: c.vision_models,
    requests_per_minute: c.requests_per_minute,
  };
}
