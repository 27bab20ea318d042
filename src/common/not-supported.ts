import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { toErrorBody } from './domain-error.filter';
import { DomainError } from './domain-error';

const NO_SOURCES =
  'this server has no data sources (folders, files): an agent works from memory blocks, archival memory and tools';
const CLOUD = 'a Letta Cloud feature this self-hosted server does not have';

/**
 * Letta routes this server does not have, answered with why (docs/letta-compatibility.md) rather than a
 * route miss: a client can tell "not here by design" from "no such object".
 */
const NOT_SUPPORTED: { route: RegExp; method?: string; resource: string; why: string }[] = [
  { route: /^\/v1\/folders(\/|$)/, resource: 'folders', why: NO_SOURCES },
  {
    route: /^\/v1\/agents\/[^/]+\/(folders|files)(\/|$)/,
    resource: 'agent folders and files',
    why: NO_SOURCES,
  },
  { route: /^\/v1\/agents\/[^/]+\/schedule(\/|$)/, resource: 'scheduled messages', why: CLOUD },
  {
    route: /^\/v1\/(templates|environments|client-side-access-tokens|groups)(\/|$)/,
    resource: 'templates, environments, access tokens and groups',
    why: CLOUD,
  },
  {
    route: /^\/v1\/mcp-servers\/[^/]+\/tools\/[^/]+\/run\/?$/,
    method: 'POST',
    resource: 'running an MCP tool directly',
    why: 'it would run a tool outside an agent, so outside its rules and consent: attach the tool to an agent (PATCH /v1/agents/{id}/tools/attach/{tool_id})',
  },
];

export function notSupportedMiddleware(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.path.startsWith('/v1/')) return next();
    const hit = NOT_SUPPORTED.find(
      (n) => n.route.test(req.path) && (!n.method || n.method === req.method),
    );
    if (!hit) return next();
    const { status, body } = toErrorBody(
      new DomainError(
        'not_found',
        'NOT_SUPPORTED',
        `${hit.resource}: not supported here; ${hit.why}`,
        {
          resource: hit.resource,
        },
      ),
    );
    res.status(status).json(body);
  };
}
