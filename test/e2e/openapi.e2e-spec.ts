import { execFileSync } from 'node:child_process';
import WebSocket from 'ws';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { ModulesContainer } from '@nestjs/core';
import { REQUEST_BODIES } from '../../src/openapi/request-schemas';
import { startApp, TestApp } from '../support/app-harness';
import { api } from '../support/processing-fixtures';

/** Validates a document with @seriousme/openapi-schema-validator (an ES module: run in a child node). */
function validateOpenApi(doc: unknown): { valid: boolean; errors?: unknown } {
  const script = `
    import('@seriousme/openapi-schema-validator').then(async ({ Validator }) => {
      let text = '';
      for await (const chunk of process.stdin) text += chunk;
      const v = new Validator();
      const res = await v.validate(JSON.parse(text));
      process.stdout.write(JSON.stringify({ ...res, version: v.version }));
    });`;
  return JSON.parse(
    execFileSync(process.execPath, ['-e', script], {
      input: JSON.stringify(doc),
      encoding: 'utf8',
    }),
  );
}

describe('API description', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it('/openapi.json is a valid OpenAPI 3.1 document with every route of the app', async () => {
    const res = await api(t, 'GET', '/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toBe('3.1.0');
    const result = validateOpenApi(doc);
    expect(result).toMatchObject({ valid: true, version: '3.1' });
    for (const path of [
      '/v1/agents',
      '/v1/agents/{id}',
      '/v1/agents/{agentId}/messages',
      '/v1/runs/{runId}/steps',
      '/v1/tools',
      '/v1/consent/requests/{id}/decision',
      '/v1/health/ready',
      '/v1/quotas',
      '/metrics',
    ])
      expect(Object.keys(doc.paths)).toContain(path);
    const op = doc.paths['/v1/agents/{id}'].get;
    expect(op.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/AgentState',
    });
    expect(op.responses.default.content['application/json'].schema.$ref).toBe(
      '#/components/schemas/Error',
    );
    expect(op.security).toEqual([{ bearer: [] }]);
    expect(doc.paths['/v1/health'].get.security).toEqual([]);
    // request bodies are schemas, not words: Letta's `messages` or `input`, the import's form
    const send = doc.paths['/v1/agents/{agentId}/messages'].post.requestBody;
    expect(send.required).toBe(true);
    expect(send.content['application/json'].schema.anyOf).toHaveLength(2);
    const create = doc.paths['/v1/agents'].post.requestBody.content['application/json'].schema;
    expect(create.properties.tool_rules.anyOf[0].items.oneOf.length).toBeGreaterThan(10);
    const form = doc.paths['/v1/agents/import'].post.requestBody.content;
    expect(form['multipart/form-data'].schema.required).toEqual(['file']);
  });

  it('every handler that reads a body (@Body) has a request schema', () => {
    const readers: string[] = [];
    for (const mod of t.app.get(ModulesContainer).values())
      for (const { metatype } of mod.controllers.values()) {
        if (typeof metatype !== 'function') continue;
        for (const method of Object.getOwnPropertyNames(metatype.prototype)) {
          const args = Reflect.getMetadata(ROUTE_ARGS_METADATA, metatype, method) ?? {};
          if (Object.keys(args).some((k) => k.startsWith(`${RouteParamtypes.BODY}:`)))
            readers.push(`${metatype.name}_${method}`);
        }
      }
    expect(readers.length).toBeGreaterThan(30);
    expect(readers.filter((id) => !REQUEST_BODIES[id])).toEqual([]);
  });

  it('serves the docs UI at /docs and the WebSocket frames at /asyncapi.json', async () => {
    const ui = await fetch(`${t.baseUrl}/docs`);
    expect(ui.status).toBe(200);
    expect(await ui.text()).toContain('swagger-ui');
    const asyncApi = (await api(t, 'GET', '/asyncapi.json')).body;
    expect(asyncApi.asyncapi).toBe('3.0.0');
    expect(asyncApi.channels.ws.address).toBe('/v1/ws');
    expect(Object.keys(asyncApi.components.schemas)).toEqual(
      expect.arrayContaining([
        'Subscribe',
        'ConsentDecision',
        'ConsentRequestFrame',
        'RunEventFrame',
      ]),
    );
  });

  it('the frames a real WebSocket client receives match their AsyncAPI schemas', async () => {
    const asyncApi = (await api(t, 'GET', '/asyncapi.json')).body;
    const Ajv = (await import('ajv/dist/2020')).default;
    const ajv = new Ajv({ strict: false });
    const byType = new Map<string, (f: unknown) => boolean>();
    const schemas: { properties: { type: { const: string } } }[] = Object.values(
      asyncApi.components.schemas,
    );
    for (const s of schemas) byType.set(s.properties.type.const, ajv.compile(s));
    const ws = new WebSocket(`${t.baseUrl.replace('http', 'ws')}/v1/ws`);
    const frames: { type: string }[] = [];
    ws.on('message', (d: Buffer) => frames.push(JSON.parse(d.toString())));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'subscribe' }));
    ws.send(JSON.stringify({ type: 'ping' }));
    ws.send(
      JSON.stringify({ type: 'consent.decision', request_id: 'consent-nope', decision: 'deny' }),
    );
    for (let i = 0; i < 100 && frames.length < 3; i++) await new Promise((r) => setTimeout(r, 20));
    ws.close();
    expect(frames.map((f) => f.type).sort()).toEqual(['error', 'pong', 'subscribed']);
    for (const f of frames)
      expect({ type: f.type, valid: byType.get(f.type)!(f) }).toEqual({
        type: f.type,
        valid: true,
      });
  });
});
