/**
 * The OpenAPI contract, checked on real traffic: every JSON response an e2e suite receives is
 * validated against the schema the document gives its route and status (the error schema for 4xx
 * and 5xx). A suite's app reports what did not match when it closes, failing that suite.
 */
import type { INestApplication } from '@nestjs/common';
import type { OpenAPIObject } from '@nestjs/swagger';
import Ajv2020, { ValidateFunction } from 'ajv/dist/2020';
import type { NextFunction, Request, Response } from 'express';
import { buildOpenApiDocument } from '../../src/openapi/openapi';

let doc: OpenAPIObject | null = null;
const ajv = new Ajv2020({
  strict: false,
  allErrors: false,
  formats: { 'date-time': /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/ },
});
const validators = new Map<string, ValidateFunction | null>();

function validatorFor(path: string, method: string, status: number): ValidateFunction | null {
  const key = `${method} ${path} ${status}`;
  if (validators.has(key)) return validators.get(key)!;
  type Response = { content?: Record<string, { schema?: object }> };
  const op = (
    doc!.paths[path] as Record<string, { responses?: Record<string, Response> }> | undefined
  )?.[method];
  const response =
    op?.responses?.[String(status)] ?? (status >= 400 ? op?.responses?.default : undefined);
  const schema = response?.content?.['application/json']?.schema;
  const v = schema ? ajv.compile({ ...schema, components: doc!.components }) : null;
  validators.set(key, v);
  return v;
}

/** Records the app's JSON responses; `problems()` lists those that do not match the document. */
export function watchResponses(app: INestApplication): { problems(): string[] } {
  doc ??= buildOpenApiDocument(app);
  const seen: {
    method: string;
    url: string;
    route: () => string | null;
    status: number;
    body: unknown;
  }[] = [];
  app.use((req: Request, res: Response, next: NextFunction) => {
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      seen.push({
        method: req.method.toLowerCase(),
        url: req.originalUrl,
        // the matched route, as Nest registered it (`/v1/agents/:id`), in OpenAPI's form
        route: () =>
          req.route?.path
            ? String(req.route.path)
                .replace(/:([A-Za-z0-9_]+)/g, '{$1}')
                .replace(/\/$/, '') || '/'
            : null,
        status: res.statusCode,
        body,
      });
      return json(body);
    };
    next();
  });
  return {
    problems: () =>
      seen.flatMap((s) => {
        const route = s.route();
        const v = route ? validatorFor(route, s.method, s.status) : null;
        if (!v || v(JSON.parse(JSON.stringify(s.body ?? null)))) return [];
        return [`${s.method.toUpperCase()} ${s.url} → ${s.status}: ${ajv.errorsText(v.errors)}`];
      }),
  };
}
