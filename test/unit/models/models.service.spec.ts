import { DomainError } from '../../../src/common/domain-error';
import { loadConfig } from '../../../src/config/app-config';
import { ToolDefinition } from '../../../src/core/tools/tool-definition';
import { LlmConfig } from '../../../src/models/model-provider';
import { ModelRateLimiter } from '../../../src/models/model-rate.limiter';
import { ModelsService } from '../../../src/models/models.service';
import { ModelProvidersService } from '../../../src/models/providers/model-providers.service';
import { OpenAiProvider } from '../../../src/models/openai.provider';
import { ScriptedProvider } from '../../../src/models/scripted.provider';
import { REQUEST_HEARTBEAT_DESCRIPTION } from '../../../src/models/tool-schema';

const BASE = 'http://127.0.0.1:9/v1';
const service = () => {
  const config = loadConfig({}, { models: { openai: { base_url: BASE, api_key: 'sk-x' } } });
  const providers = new ModelProvidersService(config);
  return new ModelsService(config, providers, new ModelRateLimiter({ now: Date.now }, providers));
};

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    expect((e as DomainError).kind).toBe('bad_request');
    return (e as DomainError).code;
  }
  return undefined;
};

describe('ModelsService', () => {
  it.each<[string, new (...a: never[]) => unknown]>([
    ['openai', OpenAiProvider],
    ['scripted', ScriptedProvider],
  ])('providerFor(%s)', (type, cls) => {
    expect(
      service().providerFor({ model: 'm', model_endpoint_type: type }, 'default'),
    ).toBeInstanceOf(cls);
  });

  it.each(['anthropic', '', undefined, 42])('providerFor(%p) is UNKNOWN_MODEL_PROVIDER', (type) => {
    const cfg = { model: 'm', model_endpoint_type: type } as unknown as LlmConfig;
    expect(codeOf(() => service().providerFor(cfg, 'default'))).toBe('UNKNOWN_MODEL_PROVIDER');
  });

  it.each<[string, Partial<LlmConfig>]>([
    ['a foreign model_endpoint', { model_endpoint: 'http://attacker.test/v1' }],
    ['a provider that is not configured', { provider_name: 'elsewhere' }],
  ])('providerFor refuses %s', (_what, over) => {
    const cfg = { model: 'm', model_endpoint_type: 'openai', ...over } as LlmConfig;
    expect(codeOf(() => service().providerFor(cfg, 'default'))).toMatch(
      /^(MODEL_ENDPOINT_NOT_ALLOWED|UNKNOWN_MODEL_PROVIDER)$/,
    );
  });

  it('toolSchemaFor adds an optional request_heartbeat and keeps the parameters', () => {
    const def: ToolDefinition = {
      name: 'search',
      description: 'Search the web',
      parameters: {
        type: 'object',
        properties: { q: { type: 'string' } },
        required: ['q'],
        additionalProperties: false,
      },
      safety: 'read_only',
      kind: 'builtin',
    };
    expect(service().toolSchemaFor(def)).toEqual({
      type: 'function',
      function: {
        name: 'search',
        description: 'Search the web',
        parameters: {
          type: 'object',
          properties: {
            q: { type: 'string' },
            request_heartbeat: { type: 'boolean', description: REQUEST_HEARTBEAT_DESCRIPTION },
          },
          required: ['q'],
          additionalProperties: false,
        },
      },
    });
    expect(def.parameters).not.toHaveProperty('properties.request_heartbeat');
  });

  it('toolSchemaFor works for a tool without properties', () => {
    const def = {
      name: 't',
      description: '',
      parameters: {},
      safety: 'read_only',
      kind: 'builtin',
    } as ToolDefinition;
    expect(service().toolSchemaFor(def).function.parameters).toEqual({
      type: 'object',
      properties: {
        request_heartbeat: { type: 'boolean', description: REQUEST_HEARTBEAT_DESCRIPTION },
      },
    });
  });

  it('countTokens: chars/4 for text, plus per-message overhead for messages', () => {
    const s = service();
    expect(s.countTokens('')).toBe(0);
    expect(s.countTokens('12345678')).toBe(2);
    expect(s.countTokens('123456789')).toBe(3);
    expect(s.countTokens([{ role: 'user', content: '12345678' }])).toBe(2 + 4);
    const withCalls = s.countTokens([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ab', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
    ]);
    expect(withCalls).toBe(Math.ceil((2 + 2 + 2 + 2) / 4) + 8);
  });
});
