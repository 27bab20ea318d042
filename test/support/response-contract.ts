/**
 * The OpenAPI contract, checked on real traffic: every JSON response an e2e suite receives is
 * validated against the schema the document gives its route and status (the error schema for 4xx
 * and 5xx), and every JSON request body the app answered 2xx against its route's request schema (a
 * body the app accepted but the schema refuses means the document is wrong; so does an accepted
 * request without the body the document requires). A suite's app reports what did not match when it
 * closes, failing that suite.
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

type Operation = {
  requestBody?: { required?: boolean; content?: Record<string, { schema?: object }> };
};

function operation(path: string, method: string): Operation | undefined {
  return (doc!.paths[path] as Record<string, Operation> | undefined)?.[method];
}

/** The route's JSON request schema: a validator, `null` for none documented. */
function requestValidatorFor(path: string, method: string): ValidateFunction | null {
  const key = `${method} ${path} request`;
  if (validators.has(key)) return validators.get(key)!;
  const schema = operation(path, method)?.requestBody?.content?.['application/json']?.schema;
  const v = schema ? ajv.compile({ ...schema, components: doc!.components }) : null;
  validators.set(key, v);
  return v;
}

/** What is wrong with an accepted request's body, given its route's document; null when nothing. */
function requestProblem(
  route: string,
  method: string,
  body: unknown,
  json: boolean,
): string | null {
  const op = operation(route, method);
  if (!op || op.requestBody?.content?.['multipart/form-data']) return null;
  const sent = json && body !== undefined && body !== null;
  if (!sent)
    return op.requestBody?.required ? 'no JSON body, which the document says is required' : null;
  const v = requestValidatorFor(route, method);
  return !v || v(body) ? null : `request body: ${ajv.errorsText(v.errors)}`;
}

/**
 * Records the app's JSON responses and the requests it answered 2xx; `problems()` lists those that
 * do not match the document.
 */
export function watchResponses(
  app: INestApplication,
  opts: { requests: boolean } = { requests: true },
): { problems(): string[] } {
  doc ??= buildOpenApiDocument(app);
  const seen: {
    method: string;
    url: string;
    route: () => string | null;
    status: number;
    body: unknown;
  }[] = [];
  const accepted: { method: string; url: string; route: string; body: unknown; json: boolean }[] =
    [];
  // the matched route, as Nest registered it (`/v1/agents/:id`), in OpenAPI's form
  const routeOf = (req: Request) =>
    req.route?.path
      ? String(req.route.path)
          .replace(/:([A-Za-z0-9_]+)/g, '{$1}')
          .replace(/\/$/, '') || '/'
      : null;
  app.use((req: Request, res: Response, next: NextFunction) => {
    res.on('finish', () => {
      const route = routeOf(req);
      if (!opts.requests || !route || res.statusCode < 200 || res.statusCode >= 300) return;
      accepted.push({
        method: req.method.toLowerCase(),
        url: req.originalUrl,
        route,
        body: JSON.parse(JSON.stringify(req.body ?? null)),
        json: !!req.is(['application/json', 'application/*+json']),
      });
    });
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      seen.push({
        method: req.method.toLowerCase(),
        url: req.originalUrl,
        route: () => routeOf(req),
        status: res.statusCode,
        body,
      });
      return json(body);
    };
    next();
  });
  return {
    problems: () => [
      ...seen.flatMap((s) => {
        const route = s.route();
        const v = route ? validatorFor(route, s.method, s.status) : null;
        if (!v || v(JSON.parse(JSON.stringify(s.body ?? null)))) return [];
        return [`${s.method.toUpperCase()} ${s.url} → ${s.status}: ${ajv.errorsText(v.errors)}`];
      }),
      ...accepted.flatMap((a) => {
        const problem = requestProblem(a.route, a.method, a.body, a.json);
        return problem ? [`${a.method.toUpperCase()} ${a.url} (accepted): ${problem}`] : [];
      }),
    ],
  };
}
