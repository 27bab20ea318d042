import type { ModelListing } from './providers/provider-catalog';

/**
 * A listed model in Letta's `Model` shape. `scripted` is not one of Letta's endpoint or provider types:
 * Letta's clients only display these fields, so the offline provider shows as what it imitates.
 */
export function toLettaModel(m: ModelListing) {
  return {
    handle: m.handle,
    name: m.model,
    display_name: m.model,
    model: m.model,
    model_type: 'llm' as const,
    model_endpoint_type: m.model_endpoint_type,
    model_endpoint: m.model_endpoint,
    provider_name: m.provider_name,
    provider_type: m.model_endpoint_type === 'scripted' ? 'letta' : m.model_endpoint_type,
    provider_category: 'base' as const,
    context_window: m.context_window,
    max_context_window: m.context_window,
    max_tokens: null,
    temperature: 0.7,
    enable_reasoner: false,
    parallel_tool_calls: true,
    put_inner_thoughts_in_kwargs: false,
  };
}
