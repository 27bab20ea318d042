import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { invokeHttpTool } from '../../../src/tools/http-tool.invoker';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

describe('invokeHttpTool (against a local server)', () => {
  let server: Server;
  let base: string;
  let handler: Handler;
  const seen: {
    method?: string;
    url?: string;
    headers: IncomingMessage['headers'];
    body: string;
  }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, headers: req.headers, body });
        handler(req, body, res);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => (seen.length = 0));

  const ctx = (signal = new AbortController().signal) => ({
    agentId: 'agent-1',
    runId: 'run-1',
    toolCallId: 'call-1',
    signal,
  });

  it('POSTs {arguments, agent_id, run_id, tool_call_id} with an Idempotency-Key and resolved headers', async () => {
    handler = (_req, _body, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    const r = await invokeHttpTool(
      { url: `${base}/refund`, method: 'POST', headers: { Authorization: 'Bearer ${TOKEN}' } },
      { amount: 5 },
      ctx(),
      { TOKEN: 's3cret' },
    );
    expect(r).toEqual({ status: 'success', value: '{"ok":true}' });
    expect(seen[0].method).toBe('POST');
    expect(JSON.parse(seen[0].body)).toEqual({
      arguments: { amount: 5 },
      agent_id: 'agent-1',
      run_id: 'run-1',
      tool_call_id: 'call-1',
    });
    expect(seen[0].headers['idempotency-key']).toBe('call-1');
    expect(seen[0].headers.authorization).toBe('Bearer s3cret');
    expect(seen[0].headers['content-type']).toBe('application/json');
  });

  it('returns a text body as is', async () => {
    handler = (_req, _body, res) =>
      res.writeHead(201, { 'content-type': 'text/plain' }).end('done');
    expect(await invokeHttpTool({ url: base, method: 'PUT' }, {}, ctx(), {})).toEqual({
      status: 'success',
      value: 'done',
    });
  });

  it('sends GET calls as query parameters', async () => {
    handler = (_req, _body, res) => res.end('x');
    await invokeHttpTool({ url: `${base}/q?fixed=1`, method: 'GET' }, { a: 1 }, ctx(), {});
    const url = new URL(seen[0].url!, base);
    expect(url.searchParams.get('fixed')).toBe('1');
    expect(JSON.parse(url.searchParams.get('arguments')!)).toEqual({ a: 1 });
    expect(url.searchParams.get('tool_call_id')).toBe('call-1');
  });

  it.each([
    [500, 'boom', /^HTTP 500: boom/],
    [404, '', /^HTTP 404$/],
    [302, '', /request failed/],
  ])('status %i is an error return', async (status, body, expected) => {
    handler = (_req, _b, res) => res.writeHead(status, { location: `${base}/elsewhere` }).end(body);
    const r = await invokeHttpTool({ url: base, method: 'POST' }, {}, ctx(), {});
    expect(r.status).toBe('error');
    expect(r.value).toMatch(expected);
  });

  it('times out per timeout_ms', async () => {
    handler = () => undefined; // never answers
    const r = await invokeHttpTool({ url: base, method: 'POST', timeout_ms: 50 }, {}, ctx(), {});
    expect(r).toEqual({ status: 'error', value: 'timed out after 50 ms' });
  });

  it('stops when the signal aborts', async () => {
    handler = () => undefined;
    const ac = new AbortController();
    const p = invokeHttpTool({ url: base, method: 'POST' }, {}, ctx(ac.signal), {});
    setImmediate(() => ac.abort());
    expect(await p).toEqual({ status: 'error', value: 'cancelled' });
  });

  it('refuses to send when a ${ENV} header is not set, naming the variable but no value', async () => {
    handler = (_req, _b, res) => res.end('x');
    const r = await invokeHttpTool(
      { url: base, method: 'POST', headers: { 'X-Key': '${MISSING}' } },
      {},
      ctx(),
      {},
    );
    expect(r.status).toBe('error');
    expect(r.value).toMatch(/MISSING/);
    expect(seen).toHaveLength(0);
  });

  it('an unreachable host is an error return', async () => {
    const r = await invokeHttpTool({ url: 'http://127.0.0.1:1/', method: 'POST' }, {}, ctx(), {});
    expect(r.status).toBe('error');
    expect(r.value).toMatch(/request failed/);
  });
});
