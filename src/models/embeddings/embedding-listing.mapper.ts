import type { EmbeddingModelInfo } from './embedding-catalog';

/**
 * A configured embedding model in Letta's `EmbeddingModel` shape. The offline `hashed` provider is not
 * one of Letta's types: it shows as provider type `letta`, endpoint type `hashed` (as `scripted` does).
 */
export function toLettaEmbeddingModel(m: EmbeddingModelInfo) {
  return {
    handle: m.handle,
    name: m.model,
    display_name: m.model,
    model_type: 'embedding' as const,
    provider_name: m.provider_name,
    provider_type: m.type === 'hashed' ? 'letta' : m.type,
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
