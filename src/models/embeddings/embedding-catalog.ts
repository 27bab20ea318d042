import type { EmbeddingSettings } from '../../config/app-config';

/** A configured embedding model as the rest of the app sees it (never its key). */
export interface EmbeddingModelInfo {
  handle: string;
  provider_name: string;
  type: 'openai' | 'hashed';
  model: string;
  dimensions: number;
  /** null for the offline `hashed` provider. */
  base_url: string | null;
  batch_size: number;
  chunk_size: number;
  max_input_chars: number;
}

/** Letta's EmbeddingConfig, as archives and agents store and show it. */
export interface EmbeddingConfig {
  handle: string;
  embedding_endpoint_type: string;
  embedding_endpoint: string | null;
  embedding_model: string;
  embedding_dim: number;
  embedding_chunk_size: number;
  batch_size: number;
  azure_endpoint: null;
  azure_version: null;
  azure_deployment: null;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export type EmbeddingChoice = { ok: EmbeddingConfig | null } | { path: string; error: string };

/**
 * The operator's embedding models (`models.embeddings`). Handles are `<provider>/<model>`; a stored
 * config is always called through its handle, so a stale endpoint in it cannot redirect a call. Pure.
 */
export class EmbeddingCatalog {
  private readonly byHandle = new Map<string, EmbeddingModelInfo>();
  readonly defaultHandle: string | null;

  constructor(settings: EmbeddingSettings) {
    for (const p of settings.providers)
      for (const m of p.models)
        this.byHandle.set(`${p.name}/${m.name}`, {
          handle: `${p.name}/${m.name}`,
          provider_name: p.name,
          type: p.type,
          model: m.name,
          dimensions: m.dimensions,
          base_url: p.base_url,
          batch_size: p.batch_size,
          chunk_size: p.chunk_size,
          max_input_chars: p.max_input_chars,
        });
    this.defaultHandle = settings.default_model;
  }

  /** Whether any embedding model is configured (none: vector search is unavailable). */
  get enabled(): boolean {
    return this.byHandle.size > 0;
  }

  list(): EmbeddingModelInfo[] {
    return [...this.byHandle.values()];
  }

  get(handle: string): EmbeddingModelInfo | undefined {
    return this.byHandle.get(handle);
  }

  /**
   * The embedding a create asks for: Letta's `embedding` (a handle) or `embedding_config` (by its
   * handle, else its `embedding_model` name), else the operator's default. With no embedding model
   * configured both are ignored (null), as before there were any.
   */
  choose(input: Obj): EmbeddingChoice {
    if (!this.enabled) return { ok: null };
    const handles = () => [...this.byHandle.keys()].join(', ');
    const { embedding, embedding_config: cfg } = input;
    if (embedding !== undefined && embedding !== null) {
      const m = typeof embedding === 'string' ? this.byHandle.get(embedding) : undefined;
      if (!m)
        return {
          path: 'embedding',
          error: `must be a configured embedding model handle; configured: ${handles()}`,
        };
      return { ok: embeddingConfigOf(m) };
    }
    if (cfg !== undefined && cfg !== null) {
      if (!isObj(cfg)) return { path: 'embedding_config', error: 'must be an object or null' };
      const m =
        typeof cfg.handle === 'string' && cfg.handle !== ''
          ? this.byHandle.get(cfg.handle)
          : this.list().find((x) => x.model === cfg.embedding_model);
      if (!m)
        return {
          path: 'embedding_config',
          error: `names no configured embedding model; configured: ${handles()}`,
        };
      if (typeof cfg.embedding_dim === 'number' && cfg.embedding_dim !== m.dimensions)
        return {
          path: 'embedding_config.embedding_dim',
          error: `${m.handle} has ${m.dimensions} dimensions, got ${cfg.embedding_dim}`,
        };
      return { ok: embeddingConfigOf(m) };
    }
    const d = this.defaultHandle === null ? undefined : this.byHandle.get(this.defaultHandle);
    return { ok: d ? embeddingConfigOf(d) : null };
  }
}

/** A configured model as Letta's `EmbeddingConfig` (what agents and archives keep and answer). */
export function embeddingConfigOf(m: EmbeddingModelInfo): EmbeddingConfig {
  return {
    handle: m.handle,
    embedding_endpoint_type: m.type,
    embedding_endpoint: m.base_url,
    embedding_model: m.model,
    embedding_dim: m.dimensions,
    embedding_chunk_size: m.chunk_size,
    batch_size: m.batch_size,
    azure_endpoint: null,
    azure_version: null,
    azure_deployment: null,
  };
}
