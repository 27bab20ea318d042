import { embeddingConfigOf, type EmbeddingModelInfo } from './embedding-catalog';

/**
 * A configured embedding model in Letta's `EmbeddingModel` shape. The offline `hashed` provider is not
 * one of Letta's types: it shows as provider type `letta`, endpoint type `hashed` (as `scripted` does).
 */
export function toLettaEmbeddingModel(m: EmbeddingModelInfo) {
  // Letta's EmbeddingModel is its EmbeddingConfig and the model's names
  return {
    ...embeddingConfigOf(m),
    name: m.model,
    display_name: m.model,
    model_type: 'embedding' as const,
    provider_name: m.provider_name,
    provider_type: m.type === 'hashed' ? 'letta' : m.type,
  };
}
