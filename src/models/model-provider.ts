import type { ChatContentPart } from '../core/loop/content-parts';

/**
 * The contract between the AgentProcessor and model providers (`openai`, `scripted`).
 * Messages and tools use the OpenAI chat-completions shapes, the common denominator.
 */
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ChatContentPart[] }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: {
        id: string;
        type: 'function';
        function: { name: string; arguments: string };
      }[];
    }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ToolSchema {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** One scripted model turn (agent field `model_script`, played by the `scripted` provider). */
export interface ScriptedTurn {
  content?: string;
  reasoning?: string;
  tool_calls?: { name: string; arguments: Record<string, unknown> }[];
}

/** The model settings of an agent (Letta's llm_config; never holds an API key). */
export interface LlmConfig {
  model: string;
  model_endpoint_type: string; // 'openai' | 'scripted'
  model_endpoint?: string | null;
  context_window?: number;
  max_tokens?: number | null;
  temperature?: number;
  [extra: string]: unknown;
}

/**
 * What a model endpoint's answer may hold (config `models.*`, docs/security.md): past each bound the call
 * fails or the value is cut, never a crash. The endpoint is the operator's, but what it sends is not
 * trusted: a proxy or a model may send anything.
 */
export interface ModelAnswerBounds {
  /** A response body (or all bytes of a stream) larger than this fails the call (`llm_api_error`). */
  max_response_bytes: number;
  /** An error answer is read this far for its message (and for "the context window was exceeded"). */
  max_error_body_bytes: number;
  /** The largest index of a streamed tool-call delta: a larger one fails the call (`invalid_llm_response`). */
  max_tool_call_index: number;
  /** A longer `Retry-After` (or `retry-after-ms`) is cut to this before a retry. */
  max_retry_after_seconds: number;
  /** A larger token count in an answer's usage is cut to this (no context window is near it). */
  max_usage_tokens: number;
}

export interface ModelRequest {
  llmConfig: LlmConfig;
  messages: ChatMessage[];
  /** The messages' tokens as the context window counted them to fit (providers that count none use it). */
  promptTokens?: number;
  tools: ToolSchema[];
  /** 'auto' when tools are offered, a name to force one function, 'none' when no tools. */
  toolChoice: 'auto' | 'none' | { name: string };
  stream: boolean;
  /** For the scripted provider: the agent's script and how many model calls this batch already made. */
  script?: ScriptedTurn[];
  batchStep: number;
  signal?: AbortSignal;
  /** Per-call timeout in ms for network providers; default config.models.openai.timeout_seconds. */
  timeoutMs?: number;
  /** Streaming: called with each text delta as it arrives. */
  onTextDelta?: (delta: string) => void;
  /**
   * Streaming: called at a streamed answer's first chunk, whatever it holds (text, reasoning, a tool
   * call): the run's time to first token. An answer not streamed arrives whole, its return is that time.
   */
  onFirstChunk?: () => void;
}

export interface ModelToolCall {
  /** As the model server gave it ('' for none); made unique within the response by the processor. */
  id: string;
  name: string;
  /** The raw arguments text as the model sent it (may be invalid JSON). */
  argumentsText: string;
}

/**
 * A model call's tokens. The endpoint's breakdown, where it gives one, as Letta reads an OpenAI-compatible
 * answer: `prompt_tokens_details.cached_tokens` (prompt tokens served from its cache) and
 * `completion_tokens_details.reasoning_tokens`; absent when it did not report them (0: it reported none).
 */
export interface ModelUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cached_input_tokens?: number;
  reasoning_tokens?: number;
}

export interface ModelResponse {
  content: string | null;
  reasoning?: string | null;
  toolCalls: ModelToolCall[];
  usage: ModelUsage;
  finishReason: string | null;
}

/**
 * Provider failures, named as Letta's stop reasons; and `context_window_exceeded` (Letta's
 * ContextWindowExceededError): the endpoint refused the prompt as longer than the model's context
 * window. The processor retries that with a smaller context; if that fails too, the run stops with
 * `llm_api_error`.
 */
export type ModelErrorKind =
  | 'llm_api_error'
  | 'invalid_llm_response'
  | 'max_tokens_exceeded'
  | 'context_window_exceeded'
  | 'cancelled';

export class ModelError extends Error {
  constructor(
    readonly kind: ModelErrorKind,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}

export interface ModelProvider {
  complete(req: ModelRequest): Promise<ModelResponse>;
}
