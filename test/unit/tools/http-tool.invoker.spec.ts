import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HostPolicy } from '../../../src/core/net/host-policy';
import { HttpCallLimits, invokeHttpTool } from '../../../src/tools/http-tool.invoker';

const LIMITS: HttpCallLimits = {
  maxResponseBytes: 1_000_000,
  maxRedirects: 5,
  policy: new HostPolicy([], ['169.254.0.0/16', 'fd00:ec2::254']),
};

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
      LIMITS,
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
    expect(await invokeHttpTool({ url: base, method: 'PUT' }, {}, ctx(), {}, LIMITS)).toEqual({
      status: 'success',
      value: 'done',
    });
  });

  it('sends GET calls as query parameters', async () => {
    handler = (_req, _body, res) => res.end('x');
    await invokeHttpTool({ url: `${base}/q?fixed=1`, method: 'GET' }, { a: 1 }, ctx(), {}, LIMITS);
    const url = new URL(seen[0].url!, base);
    expect(url.searchParams.get('fixed')).toBe('1');
    expect(JSON.parse(url.searchParams.get('arguments')!)).toEqual({ a: 1 });
    expect(url.searchParams.get('tool_call_id')).toBe('call-1');
  });

  it.each([
    [500, 'boom', /^HTTP 500: boom/],
    [404, '', /^HTTP 404$/],
    [302, '', /^too many redirects \(more than 5\)$/], // every hop redirects again
  ])('status %i is an error return', async (status, body, expected) => {
    handler = (_req, _b, res) => res.writeHead(status, { location: `${base}/elsewhere` }).end(body);
    const r = await invokeHttpTool({ url: base, method: 'POST' }, {}, ctx(), {}, LIMITS);
    expect(r.status).toBe('error');
    expect(r.value).toMatch(expected);
  });

  it('times out per timeout_ms', async () => {
    handler = () => undefined; // never answers
    const r = await invokeHttpTool(
      { url: base, method: 'POST', timeout_ms: 50 },
      {},
      ctx(),
      {},
      LIMITS,
    );
    expect(r).toEqual({ status: 'error', value: 'timed out after 50 ms' });
  });

  it('stops when the signal aborts', async () => {
    handler = () => undefined;
    const ac = new AbortController();
    const p = invokeHttpTool({ url: base, method: 'POST' }, {}, ctx(ac.signal), {}, LIMITS);
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
      LIMITS,
    );
    expect(r.status).toBe('error');
    expect(r.value).toMatch(/MISSING/);
    expect(seen).toHaveLength(0);
  });

  it('an unreachable host is an error return', async () => {
    const r = await invokeHttpTool(
      { url: 'http://127.0.0.1:1/', method: 'POST' },
      {},
      ctx(),
      {},
      LIMITS,
    );
    expect(r.status).toBe('error');
    expect(r.value).toMatch(/request failed/);
  });

  it('a body past maxResponseBytes is cut off: the model gets "response exceeded N bytes"', async () => {
    handler = (_req, _b, res) => {
      res.writeHead(200);
      res.write('x'.repeat(4096));
      res.end('y'.repeat(4096));
    };
    const r = await invokeHttpTool(
      { url: base, method: 'POST' },
      {},
      ctx(),
      {},
      {
        ...LIMITS,
        maxResponseBytes: 5000,
      },
    );
    expect(r).toEqual({ status: 'error', value: 'response exceeded 5000 bytes' });
  });

  it('follows a same-origin redirect with the declared headers', async () => {
    handler = (req, _b, res) =>
      req.url === '/start' ? res.writeHead(307, { location: '/end' }).end() : res.end('arrived');
    const r = await invokeHttpTool(
      { url: `${base}/start`, method: 'POST', headers: { 'X-Key': '${K}' } },
      {},
      ctx(),
      { K: 'k-value' },
      LIMITS,
    );
    expect(r).toEqual({ status: 'success', value: 'arrived' });
    expect(seen[1].headers['x-key']).toBe('k-value');
    expect(seen[1].method).toBe('POST');
  });

  it('a cross-origin redirect loses the declared headers', async () => {
    const other = base.replace('127.0.0.1', 'localhost');
    handler = (req, _b, res) =>
      req.url === '/start'
        ? res.writeHead(302, { location: `${other}/end` }).end()
        : res.end('arrived');
    const r = await invokeHttpTool(
      { url: `${base}/start`, method: 'POST', headers: { 'X-Key': '${K}' } },
      {},
      ctx(),
      { K: 'k-value' },
      LIMITS,
    );
    expect(r).toEqual({ status: 'success', value: 'arrived' });
    expect(seen[1].headers['x-key']).toBeUndefined();
    expect(seen[1].method).toBe('GET');
  });

  it.each<[string, string[], string[], RegExp]>([
    ['a denied address', [], ['127.0.0.0/8'], /request refused: 127\.0\.0\.1 is denied/],
    [
      'a host off the allow-list',
      ['10.0.0.0/8'],
      [],
      /request refused: .*not on the outbound host allow-list/,
    ],
  ])('%s is refused before any byte is sent', async (_what, allowed, denied, message) => {
    handler = (_req, _b, res) => res.end('x');
    const r = await invokeHttpTool(
      { url: base, method: 'POST' },
      {},
      ctx(),
      {},
      {
        ...LIMITS,
        policy: new HostPolicy(allowed, denied),
      },
    );
    expect(r.status).toBe('error');
    expect(r.value).toMatch(message);
    expect(seen).toHaveLength(0);
  });

  it('a name that resolves to a denied address is refused after DNS resolution', async () => {
    handler = (_req, _b, res) => res.end('x');
    const r = await invokeHttpTool(
      { url: base.replace('127.0.0.1', 'localhost'), method: 'POST' },
      {},
      ctx(),
      {},
      { ...LIMITS, policy: new HostPolicy([], ['127.0.0.0/8', '::1']) },
    );
    expect(r.value).toMatch(/request refused: localhost \((127\.0\.0\.1|::1)\) is denied/);
    expect(seen).toHaveLength(0);
  });

  it('with the loopback denied, the unspecified address (which lands on it) is denied too', async () => {
    handler = (_req, _b, res) => res.end('x');
    const policy = new HostPolicy([], ['127.0.0.0/8', '::1']);
    const r = await invokeHttpTool(
      { url: base.replace('127.0.0.1', '0.0.0.0'), method: 'POST' },
      {},
      ctx(),
      {},
      { ...LIMITS, policy },
    );
    expect(r.value).toBe('request refused: 0.0.0.0 is denied by the outbound host policy');
    expect(seen).toHaveLength(0);
    // ::2 is the IPv4-compatible spelling of 0.0.0.2 (host-policy maps every such spelling to its IPv4)
    for (const a of ['0.1.2.3', '::', '0:0::0', '::ffff:0.0.0.0', '::2'])
      expect([a, policy.refusal(a, a)]).toEqual([a, `${a} is denied by the outbound host policy`]);
    for (const a of ['10.0.0.1', '1.0.0.0', '2001:db8::2'])
      expect([a, policy.refusal(a, a)]).toEqual([a, null]);
    // loopback open (the default): so is the unspecified address
    expect(new HostPolicy([], ['169.254.0.0/16']).refusal('0.0.0.0', '0.0.0.0')).toBeNull();
  });

  it('a redirect to a denied address is refused', async () => {
    handler = (_req, _b, res) =>
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
    const r = await invokeHttpTool({ url: base, method: 'GET' }, {}, ctx(), {}, LIMITS);
    expect(r.value).toBe('request refused: 169.254.169.254 is denied by the outbound host policy');
  });
});
