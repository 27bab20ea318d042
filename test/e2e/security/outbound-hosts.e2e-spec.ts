/* eslint-disable @typescript-eslint/no-explicit-any */
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startApp, TestApp } from '../../support/app-harness';
import { api, say } from '../../support/processing-fixtures';

/** Tools call out only where the operator's policy allows: checked after DNS resolution and on every redirect. */
describe('security: outbound hosts of tools', () => {
  let server: Server;
  let url: string;
  const seen: { url: string; headers: Record<string, unknown> }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      seen.push({ url: req.url ?? '', headers: req.headers });
      const to = new URL(req.url ?? '/', 'http://x').searchParams.get('to');
      if (to) res.writeHead(302, { location: to }).end();
      else res.end('reached');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => (seen.length = 0));

  /** Declares a tool at `toolUrl` and has a scripted agent call it once; the tool's return message. */
  async function callVia(
    t: TestApp,
    toolUrl: string,
    headers?: Record<string, string>,
  ): Promise<any> {
    const name = `out_${Math.random().toString(36).slice(2, 8)}`;
    const declared = await api(t, 'POST', '/v1/tools/', {
      name,
      safety: 'read_only',
      kind: 'http',
      http: { url: toolUrl, method: 'GET', headers, timeout_ms: 5000 },
    });
    expect(declared.status).toBe(200);
    const agent = await api(t, 'POST', '/v1/agents/', {
      name,
      tools: [name],
      include_base_tools: false,
      model_script: [{ tool_calls: [{ name, arguments: {} }] }],
    });
    const reply = await api(t, 'POST', `/v1/agents/${agent.body.id}/messages`, say('go'));
    return reply.body.messages.find((m: any) => m.message_type === 'tool_return_message');
  }

  describe('the default policy', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startApp({
        env: { SHARED: 'shared-token-value' },
        overrides: { tools: { http: { env_allowlist: ['SHARED'] } } },
      });
    });
    afterAll(() => t.close());

    it.each([
      ['the cloud metadata address', 'http://169.254.169.254/latest/meta-data/iam/'],
      ['the IPv6 metadata address', 'http://[fd00:ec2::254]/latest/meta-data/'],
      ['an IPv4-mapped metadata address', 'http://[::ffff:169.254.169.254]/latest/'],
      ['an IPv4-mapped metadata address in hex', 'http://[::ffff:a9fe:a9fe]/latest/'],
      ['an IPv4-compatible metadata address', 'http://[::169.254.169.254]/latest/'],
      ['a NAT64 metadata address', 'http://[64:ff9b::a9fe:a9fe]/latest/'],
      ['another link-local address', 'http://169.254.1.1/'],
      // QA: outside 169.254.0.0/16 and fd00:ec2::254, these were connected to
      ['Alibaba Cloud’s metadata address', 'http://100.100.100.200/latest/meta-data/'],
      ['Google Cloud’s IPv6 metadata address', 'http://[fd20:ce::254]/computeMetadata/v1/'],
      ['an IPv6 link-local address', 'http://[fe80::a9fe:a9fe]/'],
    ])('a tool at %s is refused before any connection', async (_what, target) => {
      const ret = await callVia(t, target);
      expect(ret.status).toBe('error');
      expect(ret.tool_return).toMatch(
        /^request refused: .* is denied by the outbound host policy$/,
      );
    });

    it('a tool on 127.0.0.1 that redirects to the metadata address is refused at the redirect', async () => {
      const ret = await callVia(
        t,
        `${url}/hop?to=${encodeURIComponent('http://169.254.169.254/latest/')}`,
      );
      expect(ret.tool_return).toBe(
        'request refused: 169.254.169.254 is denied by the outbound host policy',
      );
      expect(seen).toHaveLength(1);
    });

    it('tools on 127.0.0.1 keep working, redirects included; a redirect to another origin drops the declared headers', async () => {
      const other = url.replace('127.0.0.1', 'localhost');
      const ret = await callVia(t, `${url}/hop?to=${encodeURIComponent(`${other}/final`)}`, {
        'X-Token': '${SHARED}',
      });
      expect(ret).toMatchObject({ status: 'success', tool_return: 'reached' });
      expect(seen[0].headers['x-token']).toBe('shared-token-value');
      expect(seen[1].headers['x-token']).toBeUndefined();
    });
  });

  describe('an operator policy', () => {
    it('denied_hosts with loopback: a name resolving to it (localhost) is refused after DNS resolution', async () => {
      const t = await startApp({
        overrides: { tools: { http: { denied_hosts: ['127.0.0.0/8', '::1', '169.254.0.0/16'] } } },
      });
      try {
        const ret = await callVia(t, url.replace('127.0.0.1', 'localhost'));
        expect(ret.tool_return).toMatch(
          /^request refused: localhost \((127\.0\.0\.1|::1)\) is denied/,
        );
        expect(seen).toHaveLength(0);
      } finally {
        await t.close();
      }
    });

    // QA: WHATWG URL writes [::ffff:0.0.0.0] as ::ffff:0:0, which no check matched, and the connection
    // landed on 127.0.0.1 with the loopback denied
    it('with loopback denied, every spelling of the loopback and of the unspecified address is refused before any connection', async () => {
      const p = new URL(url).port;
      const spellings = [
        `http://[::ffff:0.0.0.0]:${p}/`,
        `http://[::ffff:0:0]:${p}/`,
        `http://[::ffff:7f00:1]:${p}/`,
        `http://[::7f00:1]:${p}/`,
        `http://[64:ff9b::7f00:1]:${p}/`,
        `http://0.0.0.0:${p}/`,
        `http://0:${p}/`,
        `http://[::]:${p}/`,
      ];
      const open = await startApp();
      try {
        // the attack's address does reach the tool server on 127.0.0.1 when nothing denies it
        expect(await callVia(open, spellings[0])).toMatchObject({
          status: 'success',
          tool_return: 'reached',
        });
      } finally {
        await open.close();
      }
      seen.length = 0;
      const t = await startApp({
        overrides: { tools: { http: { denied_hosts: ['127.0.0.0/8', '::1', '169.254.0.0/16'] } } },
      });
      try {
        for (const target of spellings) {
          const ret = await callVia(t, target);
          expect({ target, ret: ret.tool_return }).toEqual({
            target,
            ret: expect.stringMatching(
              /^request refused: .* is denied by the outbound host policy$/,
            ),
          });
        }
        expect(seen).toHaveLength(0);
      } finally {
        await t.close();
      }
    });

    it('allowed_hosts: a host off the list is refused; a listed name is allowed', async () => {
      const t = await startApp({
        overrides: { tools: { http: { allowed_hosts: ['localhost'] } } },
      });
      try {
        const off = await callVia(t, url);
        expect(off.tool_return).toBe(
          'request refused: 127.0.0.1 is not on the outbound host allow-list',
        );
        const on = await callVia(t, url.replace('127.0.0.1', 'localhost'));
        expect(on.tool_return).toBe('reached');
      } finally {
        await t.close();
      }
    });
  });
});
