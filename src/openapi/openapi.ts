import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { APP_VERSION } from '../common/version';
import { asyncApiDocument } from './asyncapi';
import { MULTIPART, REQUEST_BODIES } from './request-schemas';
import { responseSchema, ROUTES } from './routes';
import { SCHEMAS } from './schemas';

const PUBLIC = /^\/(v1\/health|metrics)(\/|$)|^\/v1\/webhooks\/decisions\//;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/**
 * The OpenAPI 3.1 document. Paths, methods, parameters and operation ids are scanned from the
 * controllers by @nestjs/swagger, so a route cannot be missing; summaries and response schemas come from
 * ROUTES and SCHEMAS, request schemas from REQUEST_BODIES; the e2e harness checks them against every
 * response the suites receive and every request body the app accepts.
 */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const doc = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setOpenAPIVersion('3.1.0')
      .setTitle('Rulebound agent server')
      .setVersion(APP_VERSION)
      .setDescription(
        "Letta's `/v1` REST API (so Letta's clients work unchanged) plus our extensions: consent requests, grants, audit, secrets, webhooks, MCP servers, quotas. Errors are `{code, message, details}`. The WebSocket protocol at `/v1/ws` is described in [/asyncapi.json](/asyncapi.json).",
      )
      .addBearerAuth({
        type: 'http',
        scheme: 'bearer',
        description: 'An API key (open mode: none)',
      })
      .build(),
  );
  doc.components = { ...doc.components, schemas: { ...doc.components?.schemas, ...SCHEMAS } };
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const route = ROUTES[op.operationId ?? ''];
      const success = Object.keys(op.responses).find((s) => s.startsWith('2')) ?? '200';
      if (route) {
        op.summary = route.summary;
        const schema = responseSchema(route);
        if (route.sse)
          op.responses[success] = {
            description:
              'Server-Sent Events: one Letta message per `data:` frame, then stop_reason, usage_statistics and [DONE]',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          };
        else if (schema)
          op.responses[success] = {
            description: 'OK',
            content: { 'application/json': { schema } },
          };
        for (const [status, name] of Object.entries(route.other ?? {}))
          op.responses[status] = {
            description: name,
            content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } },
          };
      }
      const id = op.operationId ?? '';
      const body = REQUEST_BODIES[id];
      if (body)
        op.requestBody = {
          // a body is needed when the schema asks for fields (or is not an object: a list)
          required: body.type !== 'object' || !!body.required || !!body.anyOf,
          ...(route?.body ? { description: route.body } : {}),
          content: {
            [MULTIPART.has(id) ? 'multipart/form-data' : 'application/json']: { schema: body },
          },
        };
      op.responses.default = {
        description: 'An error: `{code, message, details}`',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
      op.security = PUBLIC.test(path) ? [] : [{ bearer: [] }];
    }
  }
  return doc;
}

/** Serves /openapi.json, the docs UI at /docs and /asyncapi.json (public: they describe, they reveal nothing). */
export function serveApiDocs(app: INestApplication): OpenAPIObject {
  const doc = buildOpenApiDocument(app);
  SwaggerModule.setup('docs', app, doc, {
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: 'openapi.yaml',
    customSiteTitle: 'Rulebound agent server API',
  });
  const asyncApi = asyncApiDocument();
  const http = app.getHttpAdapter();
  http.get('/asyncapi.json', (_req: unknown, res: { json: (b: unknown) => void }) =>
    res.json(asyncApi),
  );
  return doc;
}
