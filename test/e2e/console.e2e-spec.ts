/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { consoleBuilt } from '../../src/console/console-assets';
import { startApp, TestApp } from '../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../support/fake-model-server';
import { api, broker, fakeClock, startToolServer } from './consent-helpers';

/**
 * The web console in a real browser: Debian's Chromium driven by playwright-core against the app on port 0.
 * `UPDATE_SCREENSHOTS=1` rewrites the pictures in docs/console/.
 */
const CHROMIUM = '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** Polls a condition the browser cannot show (the tool server's calls) until it holds. */
async function waitFor(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
const SHOTS = process.env.UPDATE_SCREENSHOTS === '1';
const describeBrowser = existsSync(CHROMIUM) ? describe : describe.skip;
if (!existsSync(CHROMIUM))
  console.log(
    `console browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium)`,
  );

describeBrowser('web console at /console/ (Chromium)', () => {
  let t: TestApp;
  let fake: FakeModelServer;
  let tools: Awaited<ReturnType<typeof startToolServer>>;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    if (!consoleBuilt())
      execFileSync('npx', ['vite', 'build', '--config', 'console/vite.config.mjs'], {
        cwd: path.join(__dirname, '..', '..'),
        stdio: 'inherit',
      });
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
    fake = await startFakeModelServer();
    tools = await startToolServer();
    t = await startApp({ modelBaseUrl: fake.baseUrl });
    for (const name of ['pay', 'lookup'])
      expect(
        (
          await api(t, 'POST', '/v1/tools/', {
            name,
            description: name === 'pay' ? 'Pay an invoice' : 'Look up an invoice',
            safety: name === 'pay' ? 'side_effecting' : 'read_only',
            kind: 'http',
            parameters: {
              type: 'object',
              properties: { amount: { type: 'number' }, to: { type: 'string' } },
            },
            http: { url: `${tools.url}/${name}`, method: 'POST', timeout_ms: 5000 },
          })
        ).status,
      ).toBe(200);
  }, 60_000);
  beforeEach(() => {
    fake.reset();
    tools.calls.length = 0;
  });
  afterEach(async () => {
    await Promise.all(contexts.splice(0).map((c) => c.close()));
    // every test starts with an empty inbox
    for (const r of (await api(t, 'GET', '/v1/consent/requests?status=pending')).body)
      await api(t, 'POST', `/v1/consent/requests/${r.id}/decision`, { decision: 'deny' });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await fake?.close();
    await tools?.close();
  });

  /** An agent on the fake model; its name (unique) keys the model's turns to it. */
  async function anAgent(
    name: string,
    extra: Record<string, unknown> = {},
  ): Promise<{ id: string; key: string }> {
    const key = `${name}-${Math.random().toString(36).slice(2, 7)}`;
    const res = await api(t, 'POST', '/v1/agents/', {
      name: key,
      system: `You are ${key}.`,
      tools: ['pay', 'lookup'],
      tool_rules: [
        { type: 'requires_approval', tool_name: 'pay' },
        { type: 'cooldown', tool_name: 'lookup', seconds: 5 },
      ],
      memory_blocks: [{ label: 'human', value: 'Ada, accounts payable' }],
      llm_config: {
        model: 'fake',
        model_endpoint_type: 'openai',
        model_endpoint: fake.baseUrl,
        context_window: 8000,
      },
      ...extra,
    });
    expect(res.status).toBe(200);
    return { id: res.body.id as string, key };
  }

  /** The agent's model's next turns: call pay with these arguments, then answer `after`. */
  const modelPays = (
    agent: { key: string },
    args: Record<string, unknown>,
    id: string,
    after = 'Done.',
  ) =>
    fake.push([{ tool_calls: [{ name: 'pay', arguments: args, id }] }, { content: after }], {
      key: agent.key,
    });

  const say = (agent: { id: string }, content: string) =>
    api(t, 'POST', `/v1/agents/${agent.id}/messages/async`, {
      messages: [{ role: 'user', content }],
    });

  async function open(
    hash: string,
    viewport = { width: 1280, height: 860 },
    initScript?: string,
  ): Promise<Page> {
    const ctx = await browser.newContext({ viewport });
    // a missing element fails the test within jest's time, naming what it waited for
    ctx.setDefaultTimeout(10_000);
    contexts.push(ctx);
    const page = await ctx.newPage();
    if (initScript) await page.addInitScript(initScript);
    await page.goto(`${t.baseUrl}/console/${hash}`);
    await page.getByText('Live', { exact: true }).waitFor();
    return page;
  }

  const shot = async (page: Page, name: string, target?: ReturnType<Page['locator']>) => {
    if (!SHOTS) return;
    const file = path.join(__dirname, '..', '..', 'docs', 'console', `${name}.png`);
    await (target ?? page).screenshot({ path: file });
  };

  /** The tool server's calls for these tool calls (a previous test's continuation may still be running). */
  const ran = (...ids: string[]) =>
    tools.calls.filter((c) => ids.includes(c.body.tool_call_id)).map((c) => c.body.tool_call_id);

  const pendingOf = async (agentId: string) =>
    (await api(t, 'GET', '/v1/consent/requests?status=pending')).body.filter(
      (r: any) => r.agent_id === agentId,
    );

  it('serves the console at /console/ with a strict content security policy', async () => {
    const res = await fetch(`${t.baseUrl}/console/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(await res.text()).toContain('<div id="app">');
    const bare = await fetch(`${t.baseUrl}/console`, { redirect: 'manual' });
    expect(bare.headers.get('location')).toBe('/console/');
  });

  it("the console's own WebSocket connects under connect-src 'self'; one to another host is blocked by the CSP", async () => {
    // QA: connect-src 'self' ws: wss: let the page open a WebSocket to any host
    const res = await fetch(`${t.baseUrl}/console/`);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp.split('; ').find((d) => d.startsWith('connect-src'))).toBe("connect-src 'self'");
    const reached: string[] = [];
    const elsewhere = createServer((req, r) => {
      reached.push(`${req.method} ${req.url}`);
      r.end();
    });
    elsewhere.on('upgrade', (req: { url?: string }, socket: { destroy(): void }) => {
      reached.push(`upgrade ${req.url}`);
      socket.destroy();
    });
    await new Promise<void>((r) => elsewhere.listen(0, '127.0.0.1', r));
    try {
      const page = await open('#/inbox'); // "Live": the console's own ws:// connection is up
      const other = `localhost:${(elsewhere.address() as AddressInfo).port}`;
      const out = await page.evaluate(async (host) => {
        const seen: string[] = [];
        // (the page's document: this file is type-checked without the DOM library)
        const doc = (globalThis as unknown as { document: EventTarget }).document;
        doc.addEventListener('securitypolicyviolation', (e) => {
          const v = e as unknown as { violatedDirective: string; blockedURI: string };
          seen.push(`${v.violatedDirective} ${v.blockedURI}`);
        });
        await new Promise<void>((res) => {
          try {
            const ws = new WebSocket(`ws://${host}/exfil`);
            ws.onopen = () => (seen.push('open'), res());
            ws.onerror = () => res();
          } catch (e) {
            seen.push(`threw ${(e as Error).name}`);
            res();
          }
        });
        await fetch(`http://${host}/exfil`).catch(() => seen.push('fetch blocked'));
        await new Promise((r) => setTimeout(r, 200));
        return seen;
      }, other);
      expect(out).not.toContain('open');
      expect(out).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^connect-src ws:\/\/localhost/),
          'fetch blocked',
        ]),
      );
      expect(reached).toEqual([]);
    } finally {
      await new Promise<void>((r) => elsewhere.close(() => r()));
    }
  });

  it("a page of another origin cannot open the console's WebSocket nor approve (open mode); the console's own page can", async () => {
    // QA: any page in a browser on the machine subscribed to ws://127.0.0.1:<port>/v1/ws and approved
    const agent = await anAgent('cswsh');
    modelPays(agent, { amount: 9000, to: 'attacker@example.com' }, 'call_cswsh');
    await say(agent, 'pay the attacker');
    const deadline = Date.now() + 10_000;
    while ((await pendingOf(agent.id)).length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const [pending] = await pendingOf(agent.id);
    const evil = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>cute cats</title>');
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    try {
      const ctx = await browser.newContext();
      contexts.push(ctx);
      const page = await ctx.newPage();
      await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
      const attack = await page.evaluate(
        async (wsUrl) => {
          const log: string[] = [];
          const ws = new WebSocket(wsUrl);
          ws.onmessage = (m) => {
            log.push(String(m.data));
            const f = JSON.parse(String(m.data)) as { type: string; request?: { id: string } };
            if (f.type === 'consent.request')
              ws.send(
                JSON.stringify({
                  type: 'consent.decision',
                  request_id: f.request!.id,
                  decision: 'approve_for_scope',
                }),
              );
          };
          ws.onopen = () => {
            log.push('open');
            ws.send(JSON.stringify({ type: 'subscribe' }));
          };
          await new Promise<void>((r) => {
            ws.onclose = () => r();
            setTimeout(r, 2000);
          });
          return log;
        },
        `${t.baseUrl.replace(/^http/, 'ws')}/v1/ws`,
      );
      expect(attack).toEqual([]); // never opened, read nothing
    } finally {
      await new Promise<void>((r) => evil.close(() => r()));
    }
    expect((await api(t, 'GET', `/v1/consent/requests/${pending.id}`)).body.status).toBe('pending');
    expect(ran('call_cswsh')).toEqual([]);
    // the console (same origin) is live and lists it
    const page = await open('#/inbox');
    await page
      .getByRole('listitem')
      .filter({ hasText: 'attacker@example.com' })
      .getByRole('button', { name: 'Review pay request' })
      .waitFor();
  });

  it('signs in with an API key kept in session storage; a wrong key is refused; sign out forgets it', async () => {
    const keyed = await startApp({
      overrides: { auth: { api_keys: [{ key: 'sk-console-test', tenant: 'ops' }] } },
    });
    try {
      const ctx = await browser.newContext();
      ctx.setDefaultTimeout(10_000);
      contexts.push(ctx);
      const page = await ctx.newPage();
      await page.goto(`${keyed.baseUrl}/console/`);
      await page.getByRole('heading', { name: 'Sign in to the console' }).waitFor();
      const key = page.getByLabel('API key');
      await key.fill('sk-wrong');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').getByText('That key was refused.').waitFor();
      await key.fill('sk-console-test');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('Live', { exact: true }).waitFor();
      await page.getByRole('heading', { name: 'Consent inbox' }).waitFor();
      expect(await page.evaluate('sessionStorage.getItem("rulebound.apiKey")')).toBe(
        'sk-console-test',
      );
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in to the console' }).waitFor();
      expect(await page.evaluate('sessionStorage.getItem("rulebound.apiKey")')).toBeNull();
      // a key refused mid-session (revoked, rotated) returns to the sign-in with the reason
      await key.fill('sk-console-test');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Consent inbox' }).waitFor();
      await page.evaluate('sessionStorage.setItem("rulebound.apiKey", "sk-revoked")');
      // the next request uses it: navigate by the address to a page that always asks (the agents page
      // may join the sign-in's agent list still loading with the good key; any background request may
      // refuse the key first and take the navigation away, which must end the same way)
      await page.evaluate('location.hash = "#/grants"');
      await page.getByRole('alert').getByText('That key was refused.').waitFor();
      expect(await page.evaluate('sessionStorage.getItem("rulebound.apiKey")')).toBeNull();
    } finally {
      await keyed.close();
    }
  });

  it('signing out and in with another tenant’s key in the same tab shows nothing of the first tenant', async () => {
    const keyed = await startApp({
      overrides: {
        auth: {
          api_keys: [
            { key: 'sk-tenant-a', tenant: 'tenant-a' },
            { key: 'sk-tenant-b', tenant: 'tenant-b' },
          ],
        },
      },
    });
    try {
      const tool = await api(
        keyed,
        'POST',
        '/v1/tools/',
        {
          name: 'transfer',
          safety: 'side_effecting',
          kind: 'http',
          parameters: { type: 'object', properties: { to: { type: 'string' } } },
          http: { url: `${tools.url}/transfer`, method: 'POST' },
        },
        'sk-tenant-a',
      );
      expect(tool.status).toBe(200);
      const agent = await api(
        keyed,
        'POST',
        '/v1/agents/',
        {
          name: 'a-secret-agent',
          tools: ['transfer'],
          include_base_tools: false,
          tool_rules: [{ type: 'requires_approval', tool_name: 'transfer' }],
          model_script: [{ tool_calls: [{ name: 'transfer', arguments: { to: 'a-only@x' } }] }],
        },
        'sk-tenant-a',
      );
      await api(
        keyed,
        'POST',
        `/v1/agents/${agent.body.id}/messages`,
        { messages: [{ role: 'user', content: 'go' }] },
        'sk-tenant-a',
      );
      const ctx = await browser.newContext();
      ctx.setDefaultTimeout(10_000);
      contexts.push(ctx);
      const page = await ctx.newPage();
      await page.goto(`${keyed.baseUrl}/console/`);
      const signIn = async (key: string) => {
        await page.getByLabel('API key').fill(key);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByText('Live', { exact: true }).waitFor();
      };
      await signIn('sk-tenant-a');
      await page.getByRole('button', { name: 'Review transfer request' }).waitFor();
      await page.getByRole('button', { name: 'Sign out' }).click();
      await signIn('sk-tenant-b');
      await page.getByText('Nothing waiting').waitFor();
      expect(await page.content()).not.toContain('a-only@x');
      expect(await page.getByRole('button', { name: 'Review transfer request' }).count()).toBe(0);
    } finally {
      await keyed.close();
    }
  });

  it('a request parked by the model appears in the inbox without reload', async () => {
    const agent = await anAgent('billing');
    const page = await open('#/inbox');
    await page.getByText('Nothing waiting').waitFor();
    modelPays(agent, { amount: 42.5, to: 'acme@example.com' }, 'call_inbox_1');
    await say(agent, 'pay invoice 7');
    const card = page.getByRole('listitem').filter({ hasText: 'pay' });
    await card.getByRole('button', { name: 'Review pay request' }).waitFor();
    expect(await card.textContent()).toContain('acme@example.com');
    await page.getByRole('link', { name: /Inbox/ }).getByText('1').waitFor(); // the badge
    const second = await anAgent('payroll');
    modelPays(second, { amount: 1200, to: 'staff@example.com' }, 'call_inbox_2');
    await say(second, 'run payroll');
    await page.getByRole('button', { name: 'Review pay request' }).nth(1).waitFor();
    await shot(page, 'inbox');
    const phone = await open('#/inbox', { width: 390, height: 844 });
    await phone.getByRole('button', { name: 'Review pay request' }).nth(1).waitFor();
    await shot(phone, 'inbox-phone');
  });

  it('arguments with a right-to-left override, zero-width characters and space padding show as escapes, one row per key, every key in view', async () => {
    // QA: JSON.stringify in a small pre-wrap box: U+202E reordered the text shown, U+200B made two keys
    // look alike, and 5,000 ideographic spaces pushed the real values out of view
    const agent = await anAgent('spoof');
    const args = {
      amount: 50,
      'amo\u200Bunt': 50000,
      to: '\u202Emoc.elpmaxe@lorac', // shows as "carol@example.com" when the override is obeyed
      note: `${'\u3000'.repeat(5000)}and to mallory`,
      memo: `x${'\u00A0'.repeat(3000)}y`,
      blob: 'a'.repeat(1000),
    };
    modelPays(agent, args, 'call_spoof');
    const page = await open('#/inbox', { width: 1280, height: 1240 });
    await say(agent, 'pay carol');
    const card = page.getByRole('listitem').filter({ hasText: 'amo\\u200Bunt' });
    await card
      .getByRole('note')
      .getByText(/contains invisible or direction characters/)
      .waitFor();
    await card.getByRole('button', { name: 'Review pay request' }).click();
    const dialog = page.getByRole('dialog', { name: /wants to run pay/ });
    const list = dialog.locator('dl[aria-label="Arguments"]');
    expect(await dialog.getByRole('note').textContent()).toMatch(
      /^⚠ contains invisible or direction characters .* in amo\\u200Bunt, to, note, memo$/,
    );
    // one row per key, each key and the start of its value as text, the hidden characters escaped
    const keys = await list.getByRole('term').allTextContents();
    expect(keys).toEqual(['amount', 'amo\\u200Bunt', 'to', 'note', 'memo', 'blob']);
    const values = await list.getByRole('definition').allTextContents();
    expect(values).toEqual([
      '50',
      '50000',
      '"\\u202Emoc.elpmaxe@lorac"',
      '"\\u3000×5000and to mallory"',
      '"x\\u00A0×3000y"',
      `"${'a'.repeat(159)}+842 chars`,
    ]);
    expect(await list.locator('.esc').first().textContent()).toBe('\\u200B');
    // nothing the data holds reaches the page unescaped
    const text = (await list.textContent())!;
    for (const ch of ['\u202E', '\u200B', '\u3000', '\u00A0']) expect(text).not.toContain(ch);
    // every key is on screen, beside the start of its value
    const viewport = page.viewportSize()!;
    for (const term of await list.getByRole('term').all()) {
      const box = (await term.boundingBox())!;
      expect(box.y + box.height).toBeLessThanOrEqual(viewport.height);
    }
    // the constraint's fields tell the two keys apart too
    await dialog.getByRole('checkbox', { name: 'amo\\u200Bunt' }).check();
    await dialog.getByRole('combobox', { name: 'Condition on amo\\u200Bunt' }).waitFor();
    // the long value opens in full on request, and closes again
    await list
      .getByRole('button', { name: 'Show 842 more characters of the value of blob' })
      .click();
    expect((await list.getByRole('definition').last().textContent())!).toBe(
      `"${'a'.repeat(1000)}"less`,
    );
    await list.getByRole('button', { name: 'Show less of the value of blob' }).click();
    await dialog.getByRole('button', { name: 'Deny' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect(ran('call_spoof')).toEqual([]);
  });

  it('an agent name and a scope with a direction override, a zero-width space, a line break and padding read as escapes in the dialog title, the inbox and the grants page', async () => {
    // QA: only the arguments were revealed. An agent name ending in U+202E turned the rest of the title
    // around ("wants to run pay" read backwards), a line break split it, a padding pushed the tool away
    const name = `Approve read_file\u202E\u200B\n${'\u3000'.repeat(150)}${'x'.repeat(10)}`;
    const shown = `Approve read_file\\u202E\\u200B\\u000A\\u3000×150${'x'.repeat(10)}`;
    const scope = 'pay\u200B:all\u202E';
    const agent = await anAgent('spoofed-name', {
      name,
      tool_rules: [{ type: 'requires_approval', tool_name: 'pay', scope }],
    });
    const page = await open('#/inbox', { width: 1280, height: 1240 });
    modelPays(agent, { amount: 5 }, 'call_spoofed_name');
    await say(agent, 'pay 5');
    const card = page.getByRole('listitem').filter({ hasText: 'scope pay\\u200B:all\\u202E' });
    expect(await card.locator('.eyebrow').textContent()).toBe(shown);
    await card.getByRole('button', { name: 'Review pay request' }).click();

    const dialog = page.getByRole('dialog', { name: /wants to run pay$/ });
    const title = dialog.getByRole('heading', { level: 2 });
    // the name cut to its start, the tool whole; the whole name is the tooltip and stands below
    expect(await title.textContent()).toBe(
      'Approve read_file\\u202E\\u200B\\u000A\\u3000×150… wants to run pay',
    );
    expect(await title.locator('bdi[title]').getAttribute('title')).toBe(shown);
    expect(await dialog.getByRole('note').textContent()).toBe(
      '⚠ the agent name, the scope: invisible or direction characters (shown as \\u… escapes)',
    );
    const facts = dialog.locator('dl.facts dd');
    expect(await facts.allTextContents()).toEqual([
      `${shown} ${agent.id}`,
      'pay\\u200B:all\\u202E',
      'call_spoofed_name',
    ]);
    expect(await dialog.locator('p.muted').first().textContent()).toBe(
      'pay requires consent (scope "pay\\u200B:all\\u202E")',
    );
    // each name is its own direction isolate: nothing in it reorders the sentence around it
    expect(
      await title
        .locator('bdi')
        .first()
        // (the page's window: this file is type-checked without the DOM library)
        .evaluate((e) => (globalThis as any).getComputedStyle(e).unicodeBidi),
    ).toBe('isolate');
    await dialog.getByRole('button', { name: 'Approve for scope' }).click();
    await dialog.waitFor({ state: 'detached' });

    await page.getByRole('link', { name: 'Grants' }).click();
    await page.getByRole('combobox', { name: 'Agent' }).selectOption({ label: shown });
    const row = page.getByRole('table', { name: 'Grants' }).getByRole('row').nth(1);
    await row
      .getByRole('button', { name: `Revoke grant for ${shown}, scope pay\\u200B:all\\u202E` })
      .waitFor();
    expect(await row.locator('td').nth(0).textContent()).toBe(shown);
    expect(await row.locator('td').nth(1).textContent()).toBe('pay\\u200B:all\\u202E');
    const text = (await page.locator('main').textContent())!;
    for (const ch of ['\u202E', '\u200B', '\u3000', '\n']) expect(text).not.toContain(ch);
  });

  it('the chat timeline and the audit log show messages, tool names and reasons with their hidden characters as escapes', async () => {
    // QA: the timeline and the audit log printed tenant and model text raw: U+202E reordered it, U+200B hid
    // in a tool name the model made up, a run of line breaks pushed the rest of an answer out of view
    const agent = await anAgent('spoofed-chat');
    const page = await open(`#/chat/${agent.id}`);
    fake.push(
      [
        { tool_calls: [{ name: 'pay\u200B', arguments: { to: 'a\u202Eb' }, id: 'call_ghost' }] },
        { tool_calls: [{ name: 'pay', arguments: { amount: 1 }, id: 'call_spoofed_chat' }] },
        { content: `Done\u202E.${'\n'.repeat(200)}hidden` },
      ],
      { key: agent.key },
    );
    await page.getByRole('textbox', { name: 'Message' }).fill('please\u200B pay');
    await page.getByRole('button', { name: 'Send' }).click();
    const timeline = page.getByRole('log', { name: 'Run timeline' });
    await timeline
      .getByRole('button', { name: 'Answer consent request for pay (call_spoofed_chat)' })
      .waitFor();
    const [req] = await pendingOf(agent.id);
    await api(t, 'POST', `/v1/consent/requests/${req.id}/decision`, {
      decision: 'deny',
      reason: 'fine\u202Eenif',
    });
    await timeline.getByText(/^Stop:/).waitFor();
    await timeline.getByText('denied (“fine\\u202Eenif”) by default via REST').waitFor();
    await page
      .getByRole('status', { name: 'Notifications' })
      .getByText('pay — denied (“fine\\u202Eenif”) by default via REST')
      .waitFor();
    const lines = await timeline.getByRole('listitem').allTextContents();
    expect(lines).toEqual(
      expect.arrayContaining([
        'You please\\u200B pay',
        expect.stringMatching(/^Tool call pay\\u200B\s*\{\s*"to": "a\\u202Eb"\s*\}$/),
        'Agent Done\\u202E.\\u000A×200hidden',
      ]),
    );
    const text = (await timeline.textContent())!;
    for (const ch of ['\u202E', '\u200B']) expect(text).not.toContain(ch);

    await page.getByRole('link', { name: 'Audit' }).click();
    const filters = page.getByRole('form', { name: 'Filter the audit log' });
    await filters.getByLabel('Agent').selectOption({ label: agent.key });
    await filters.getByLabel('Decision').selectOption('deny');
    const table = page.getByRole('table', { name: 'Audit entries' });
    await table.getByText('“fine\\u202Eenif”').waitFor();
    expect(await table.textContent()).not.toContain('\u202E');
  });

  it('a new request raises a browser notification when the person allowed them', async () => {
    const agent = await anAgent('notify');
    // headless Chromium shows no notifications: a stand-in records what the console asks for
    const page = await open(
      '#/inbox',
      undefined,
      `window.__notes = [];
       window.Notification = class {
         static permission = 'granted';
         static requestPermission() { return Promise.resolve('granted'); }
         constructor(title, options) { window.__notes.push({ title, body: options.body, tag: options.tag }); }
       };`,
    );
    modelPays(agent, { amount: 8 }, 'call_notify_1');
    await say(agent, 'pay 8');
    await page.getByRole('button', { name: 'Review pay request' }).waitFor();
    const [req] = await pendingOf(agent.id);
    expect(await page.evaluate('window.__notes')).toEqual([
      {
        title: 'Consent requested: pay',
        body: `${agent.key} asks to run pay (scope pay)`,
        tag: req.id,
      },
    ]);
  });

  it('Approve once runs the tool, and the chat timeline shows the call and its result', async () => {
    const agent = await anAgent('support');
    const page = await open(`#/chat/${agent.id}`);
    modelPays(agent, { amount: 19.99, to: 'bob@example.com' }, 'call_once_1', 'Refund sent.');
    await page.getByRole('textbox', { name: 'Message' }).fill('refund order 1001');
    await page.getByRole('button', { name: 'Send' }).click();
    const timeline = page.getByRole('log', { name: 'Run timeline' });
    await timeline.getByText('Waiting for consent').waitFor();
    await timeline.getByRole('button', { name: /^Answer consent request for pay \(/ }).click();
    const dialog = page.getByRole('dialog', { name: /wants to run pay/ });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Approve once' }).click();
    await dialog.waitFor({ state: 'detached' });
    await timeline.getByText('"ok": true').waitFor();
    await timeline.getByText('Refund sent.').waitFor();
    await timeline.getByText('approved once by default via the console/WebSocket').waitFor();
    expect(await timeline.getByText(/^Model call \d+…$/).count()).toBe(0); // each call shows once, answered
    expect(tools.calls.filter((c) => c.body.tool_call_id === 'call_once_1')).toEqual([
      {
        path: '/pay',
        body: expect.objectContaining({ arguments: { amount: 19.99, to: 'bob@example.com' } }),
      },
    ]);
    await page
      .getByRole('status', { name: 'Notifications' })
      .getByText(/pay — approved once by default/)
      .waitFor();
    await shot(page, 'timeline');
  });

  it('a tool_call_id the model reuses: the earlier consent line keeps its answer, the new call waits for its own', async () => {
    const agent = await anAgent('reuse');
    const page = await open(`#/chat/${agent.id}`);
    const timeline = page.getByRole('log', { name: 'Run timeline' });
    const answer = page.getByRole('button', { name: /^Answer consent request for pay \(/ });
    const approveOnce = async () => {
      await answer.click();
      const dialog = page.getByRole('dialog', { name: /wants to run pay/ });
      await dialog.getByRole('button', { name: 'Approve once' }).click();
      await dialog.waitFor({ state: 'detached' });
    };
    const approved = timeline.getByText('approved once by default via the console/WebSocket');
    modelPays(agent, { amount: 1, to: 'ann@example.com' }, 'call_0', 'Paid one.');
    await page.getByRole('textbox', { name: 'Message' }).fill('pay one');
    await page.getByRole('button', { name: 'Send' }).click();
    await approveOnce();
    await timeline.getByText('Paid one.').waitFor();
    // the provider gives the next payment the same id
    modelPays(agent, { amount: 2, to: 'ann@example.com' }, 'call_0', 'Paid two.');
    await page.getByRole('textbox', { name: 'Message' }).fill('pay two');
    await page.getByRole('button', { name: 'Send' }).click();
    await timeline.getByText('Waiting for consent').waitFor();
    expect(await answer.count()).toBe(1);
    expect(await approved.count()).toBe(1);
    await approveOnce();
    await timeline.getByText('Paid two.').waitFor();
    await waitFor(() => tools.calls.length === 2);
    expect(await approved.count()).toBe(2);
    expect(tools.calls.map((c) => [c.body.tool_call_id, c.body.arguments.amount])).toEqual([
      ['call_0', 1],
      ['call_0', 2],
    ]);
  });

  it('Approve for 10 minutes with a constraint creates the grant that covers the next call', async () => {
    const agent = await anAgent('refunds');
    const page = await open('#/inbox', { width: 1280, height: 1240 });
    modelPays(agent, { amount: 50, to: 'carol@example.com' }, 'call_grant_1');
    await say(agent, 'refund 50');
    await page.getByRole('button', { name: 'Review pay request' }).click();
    const dialog = page.getByRole('dialog', { name: /wants to run pay/ });
    await dialog.getByRole('checkbox', { name: 'amount' }).check();
    await dialog.getByRole('checkbox', { name: 'to' }).check();
    const schema = dialog.getByLabel('Constraint as JSON Schema');
    expect(JSON.parse((await schema.textContent())!)).toEqual({
      type: 'object',
      properties: {
        amount: { type: 'number', maximum: 50 },
        to: { type: 'string', pattern: '@example\\.com$' },
      },
      required: ['amount', 'to'],
    });
    await dialog.getByRole('combobox', { name: 'Duration' }).selectOption({ label: '10 minutes' });
    await shot(page, 'dialog', dialog);
    await dialog.getByRole('button', { name: 'Approve for…' }).click();
    await dialog.waitFor({ state: 'detached' });

    const grants = (await api(t, 'GET', `/v1/agents/${agent.id}/grants`)).body;
    expect(grants).toEqual([
      expect.objectContaining({
        decision: 'approve_for_duration',
        constraint: expect.objectContaining({ properties: expect.any(Object) }),
      }),
    ]);
    // the tenant-wide list (the grants page's one request) has it too
    expect((await api(t, 'GET', `/v1/grants?agent_id=${agent.id}`)).body).toEqual(grants);
    expect((await api(t, 'GET', '/v1/grants?limit=1000')).body.map((g: any) => g.id)).toContain(
      grants[0].id,
    );
    expect((await api(t, 'GET', '/v1/grants?limit=0')).status).toBe(400);
    const ttl = Date.parse(grants[0].expires_at) - Date.parse(grants[0].created_at);
    expect(ttl).toBe(600_000);

    // the next call within the constraint runs without asking
    await page
      .getByRole('status', { name: 'Notifications' })
      .getByText(/approved for a duration/)
      .waitFor();
    await waitFor(() => ran('call_grant_1').length === 1);
    modelPays(agent, { amount: 30, to: 'dave@example.com' }, 'call_grant_2');
    const next = await api(t, 'POST', `/v1/agents/${agent.id}/messages`, {
      messages: [{ role: 'user', content: 'refund 30' }],
    });
    expect(next.body.stop_reason.stop_reason).not.toBe('requires_approval');
    expect(ran('call_grant_1', 'call_grant_2')).toEqual(['call_grant_1', 'call_grant_2']);
    expect(await pendingOf(agent.id)).toEqual([]);

    // the grants page shows it, with its constraint
    await page.getByRole('link', { name: 'Grants' }).click();
    const table = page.getByRole('table', { name: 'Grants' });
    await table.getByText('"maximum": 50').waitFor();
    await table.getByRole('button', { name: /^Revoke grant for .*, scope pay$/ }).waitFor();
  });

  it('"amount ≤ 50" does not cover "50000" as text, for a tool whose schema takes a number or a text', async () => {
    // QA: the constraint was {maximum: 50} without a type, which every string satisfies
    const wire = await api(t, 'POST', '/v1/tools/', {
      name: 'wire',
      description: 'Wire money',
      safety: 'side_effecting',
      kind: 'http',
      parameters: {
        type: 'object',
        properties: { amount: { type: ['number', 'string'] }, to: { type: 'string' } },
      },
      http: { url: `${tools.url}/wire`, method: 'POST', timeout_ms: 5000 },
    });
    expect(wire.status).toBe(200);
    const agent = await anAgent('wires', {
      tools: ['wire'],
      tool_rules: [{ type: 'requires_approval', tool_name: 'wire' }],
    });
    const wires = (args: Record<string, unknown>, id: string) =>
      fake.push([{ tool_calls: [{ name: 'wire', arguments: args, id }] }, { content: 'Done.' }], {
        key: agent.key,
      });
    const page = await open('#/inbox', { width: 1280, height: 1240 });
    wires({ amount: 50, to: 'carol@example.com' }, 'call_wire_1');
    await say(agent, 'wire 50');
    await page.getByRole('button', { name: 'Review wire request' }).click();
    const dialog = page.getByRole('dialog', { name: /wants to run wire/ });
    await dialog.getByRole('checkbox', { name: 'amount' }).check();
    expect(
      JSON.parse((await dialog.getByLabel('Constraint as JSON Schema').textContent())!),
    ).toEqual({
      type: 'object',
      properties: { amount: { type: 'number', maximum: 50 } },
      required: ['amount'],
    });
    await dialog.getByRole('combobox', { name: 'Duration' }).selectOption({ label: '10 minutes' });
    await dialog.getByRole('button', { name: 'Approve for…' }).click();
    await dialog.waitFor({ state: 'detached' });
    await waitFor(() => ran('call_wire_1').length === 1);

    // the same digits as text are not "≤ 50": the person is asked again, nothing runs
    wires({ amount: '50000', to: 'mallory@example.com' }, 'call_wire_2');
    const sneaky = await api(t, 'POST', `/v1/agents/${agent.id}/messages`, {
      messages: [{ role: 'user', content: 'wire 50000' }],
    });
    expect(sneaky.body.stop_reason.stop_reason).toBe('requires_approval');
    expect(ran('call_wire_2')).toEqual([]);
    expect(await pendingOf(agent.id)).toEqual([
      expect.objectContaining({ arguments: { amount: '50000', to: 'mallory@example.com' } }),
    ]);
  });

  it('Approve for scope creates a grant without expiry that the grants page can revoke', async () => {
    const agent = await anAgent('scoped');
    const page = await open('#/inbox');
    modelPays(agent, { amount: 4, to: 'erin@example.com' }, 'call_scope_1');
    await say(agent, 'pay 4');
    await page.getByRole('button', { name: 'Review pay request' }).click();
    const dialog = page.getByRole('dialog', { name: /wants to run pay/ });
    await dialog.getByRole('button', { name: 'Approve for scope' }).click();
    await dialog.waitFor({ state: 'detached' });
    // the dialog may close on the live frame a moment before the answer to its own POST
    const grants = () => api(t, 'GET', `/v1/grants?agent_id=${agent.id}`).then((r) => r.body);
    let found: unknown[] = [];
    for (let i = 0; i < 100 && found.length === 0; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      found = await grants();
    }
    const [grant] = found;
    expect(grant).toMatchObject({
      decision: 'approve_for_scope',
      expires_at: null,
      constraint: null,
    });
    await page.getByRole('link', { name: 'Grants' }).click();
    await page.getByRole('combobox', { name: 'Agent' }).selectOption({ label: agent.key });
    const table = page.getByRole('table', { name: 'Grants' });
    // the row of this agent's grant: until the filter's answer arrives, the page lists every agent's
    const row = table.getByRole('row', { name: new RegExp(`^${agent.key} `) });
    await row.getByText('any arguments').waitFor();
    await row.getByRole('button', { name: /^Revoke grant for .*, scope pay$/ }).click();
    await row.getByText('revoked').waitFor();
    expect(
      (await api(t, 'GET', `/v1/grants?agent_id=${agent.id}`)).body[0].revoked_at,
    ).not.toBeNull();
  });

  it('Deny shows the reason in the timeline', async () => {
    const agent = await anAgent('treasury');
    const page = await open(`#/chat/${agent.id}`);
    modelPays(
      agent,
      { amount: 9000, to: 'mallory@example.net' },
      'call_deny_1',
      'I could not pay.',
    );
    await page.getByRole('textbox', { name: 'Message' }).fill('wire 9000 to mallory');
    await page.getByRole('button', { name: 'Send' }).click();
    const timeline = page.getByRole('log', { name: 'Run timeline' });
    await timeline.getByRole('button', { name: /^Answer consent request for pay \(/ }).click();
    const dialog = page.getByRole('dialog', { name: /wants to run pay/ });
    await dialog.getByRole('textbox', { name: 'Reason for denying' }).fill('unknown payee');
    await dialog.getByRole('button', { name: 'Deny' }).click();
    await dialog.waitFor({ state: 'detached' });
    // the tool's refusal carries the reason, and the parked call says who denied it
    await timeline.getByText(/pay was denied: unknown payee/).waitFor();
    await timeline
      .getByText('denied (“unknown payee”) by default via the console/WebSocket')
      .waitFor();
    expect(ran('call_deny_1')).toEqual([]);
  });

  it('two pages race: the loser’s dialog closes with the winner’s decision', async () => {
    const agent = await anAgent('race');
    const [a, b] = [await open('#/inbox'), await open('#/inbox')];
    modelPays(agent, { amount: 5 }, 'call_race_1');
    await say(agent, 'pay 5');
    const dialogs = [];
    for (const p of [a, b]) {
      await p.getByRole('button', { name: 'Review pay request' }).click();
      dialogs.push(p.getByRole('dialog', { name: /wants to run pay/ }));
    }
    await b
      .getByRole('dialog')
      .getByRole('textbox', { name: 'Reason for denying' })
      .fill('not today');
    // whichever decision lands first wins; the other page's click may find its dialog already closed
    await Promise.allSettled([
      dialogs[0].getByRole('button', { name: 'Approve once' }).click({ timeout: 3000 }),
      dialogs[1].getByRole('button', { name: 'Deny' }).click({ timeout: 3000 }),
    ]);
    await Promise.all(dialogs.map((d) => d.waitFor({ state: 'detached' })));
    const req = (await api(t, 'GET', '/v1/consent/requests?status=all')).body.find(
      (r: any) => r.agent_id === agent.id,
    );
    const winner =
      req.decision === 'approve_once'
        ? 'pay — approved once by default via the console/WebSocket'
        : 'pay — denied (“not today”) by default via the console/WebSocket';
    for (const p of [a, b]) {
      await p.getByRole('status', { name: 'Notifications' }).getByText(winner).waitFor();
    }
  });

  it('expiry closes the dialog as "denied: timeout"', async () => {
    const agent = await anAgent('slow', { tool_executor: { consent_timeout_seconds: 60 } });
    const page = await open('#/inbox');
    modelPays(agent, { amount: 1 }, 'call_expire_1');
    await say(agent, 'pay 1');
    await page.getByRole('button', { name: 'Review pay request' }).click();
    const dialog = page.getByRole('dialog', { name: /wants to run pay/ });
    await dialog.waitFor();
    const clock = fakeClock(t);
    try {
      clock.advance(61_000);
      await broker(t).expireDue(clock.now);
    } finally {
      clock.restore();
    }
    await dialog.waitFor({ state: 'detached' });
    await page
      .getByRole('status', { name: 'Notifications' })
      .getByText('pay — denied: timeout')
      .waitFor();
    expect(ran('call_expire_1')).toEqual([]);
  });

  it('agent creation with a bad rule shows the error at its JSON path', async () => {
    const page = await open('#/agents/new');
    await page.getByRole('tab', { name: 'YAML' }).click();
    await page
      .getByRole('textbox', { name: 'Agent as YAML' })
      .fill(
        [
          'name: broken-rules',
          'system: You pay.',
          'tools: [pay]',
          'tool_rules:',
          '  - type: requires_approval',
          '    tool_name: pay',
          '  - type: cooldown',
          '    tool_name: pay',
          '    seconds: -5',
        ].join('\n'),
      );
    await page.getByRole('button', { name: 'Create agent' }).click();
    const errors = page.getByRole('list', { name: 'Validation errors' });
    await errors.getByText('tool_rules[1].seconds').waitFor();
    // the form tab shows it beside the rules field
    await page.getByRole('tab', { name: 'Form' }).click();
    await page.getByRole('textbox', { name: 'Tool rules (YAML list)' }).waitFor();
    expect(
      await page
        .getByRole('textbox', { name: 'Tool rules (YAML list)' })
        .getAttribute('aria-invalid'),
    ).toBe('true');
    expect((await api(t, 'GET', '/v1/agents/?name=broken-rules')).body).toEqual([]);
  });

  it('agents: list, search and a detail with tool safety, rules as sentences and memory', async () => {
    const policy = await api(t, 'POST', '/v1/blocks/', { label: 'policy', value: 'Refunds ≤ 50' });
    const agent = await anAgent('ledger', { block_ids: [policy.body.id] });
    const peer = await anAgent('peer', { block_ids: [policy.body.id] });
    const page = await open('#/agents');
    await page.getByRole('searchbox', { name: 'Search agents' }).fill('ledger');
    await page.getByRole('link', { name: /^ledger-/ }).click();
    await page.getByRole('heading', { level: 1, name: /^ledger-/ }).waitFor();
    const rules = page.getByRole('list', { name: 'Tool rules' });
    await rules.getByText('“pay” needs a person’s consent.').waitFor();
    await rules.getByText('“lookup” cannot run again within 5 s of its last run.').waitFor();
    await page.getByRole('row', { name: /pay.*side_effecting/ }).waitFor();
    await page.getByRole('row', { name: /lookup.*read_only/ }).waitFor();
    await page.getByText('Ada, accounts payable').waitFor();
    // the shared block names the other agent that has it
    await page.getByText('Refunds ≤ 50').waitFor();
    await page
      .getByText(/^Shared with/)
      .getByRole('link', { name: peer.key })
      .waitFor();
    expect(page.url()).toContain(agent.id);
    await shot(page, 'agent');
  });

  it('the timeline shows passes, heartbeats, model calls with tokens, rule refusals and the stop; past runs open with their steps', async () => {
    const agent = await anAgent('passes');
    const page = await open(`#/chat/${agent.id}`);
    fake.push(
      [
        { tool_calls: [{ name: 'lookup', arguments: { to: 'a', request_heartbeat: true } }] },
        { tool_calls: [{ name: 'lookup', arguments: { to: 'b' } }] },
        { content: 'Looked it up.' },
      ],
      { key: agent.key },
    );
    await page.getByRole('textbox', { name: 'Message' }).fill('look it up twice');
    await page.getByRole('button', { name: 'Send' }).click();
    const timeline = page.getByRole('log', { name: 'Run timeline' });
    await timeline.getByText(/^Stop: end_turn/).waitFor();
    await timeline.getByText('pass 2 begins').waitFor();
    await timeline.getByText(/Model call 3 answered/).waitFor();
    await timeline
      .getByText(/\[ToolRuleViolation\] lookup is cooling down/)
      .first()
      .waitFor();
    expect(await timeline.getByText('Refused', { exact: true }).count()).toBe(1);
    // Letta's heartbeat after the refused call goes on in pass 2: only a heartbeat request starts a pass
    await timeline.getByText(/Continuing: tool rule violation\./).waitFor();
    expect(await timeline.getByText(/pass \d+ begins/).count()).toBe(1);
    expect(
      await timeline.getByText(/\d+ tokens \(\d+ in, \d+ out\) · 3 model call\(s\)/).count(),
    ).toBe(1);
    // nothing raw: every event reads as a sentence
    expect(await timeline.textContent()).not.toContain('{"');

    // the finished run in the past runs: its three model calls and its messages, with the pass marker
    await page
      .getByRole('button', { name: /end_turn/ })
      .first()
      .click();
    const calls = page.getByRole('table', { name: /^Model calls of run / });
    await calls.getByRole('row').nth(3).waitFor();
    expect(await calls.getByRole('row').count()).toBe(4); // a header and three calls
    await page
      .getByRole('list', { name: /^Messages of run / })
      .getByText('pass 2 begins')
      .waitFor();
  });

  it('past runs page back: the newest 20 first, then older ones on request', async () => {
    const agent = await anAgent('history');
    for (let i = 0; i < 21; i++)
      await api(t, 'POST', `/v1/agents/${agent.id}/messages`, {
        messages: [{ role: 'user', content: `message ${i}` }],
      });
    // the older page (PostgreSQL: the cursor's subquery must name the table with its schema)
    const newest = (await api(t, 'GET', `/v1/runs/?agent_id=${agent.id}&limit=20`)).body;
    const older = await api(
      t,
      'GET',
      `/v1/runs/?agent_id=${agent.id}&limit=20&after=${newest[19].id}`,
    );
    expect(older.status).toBe(200);
    expect(older.body).toHaveLength(1);
    const newer = await api(t, 'GET', `/v1/runs/?agent_id=${agent.id}&before=${newest[1].id}`);
    expect(newer.body.map((r: any) => r.id)).toEqual([newest[0].id]);
    const page = await open(`#/chat/${agent.id}`);
    const past = page.getByRole('list', { name: 'Past runs' });
    await past.getByRole('listitem').nth(19).waitFor();
    expect(await past.getByRole('listitem').count()).toBe(20);
    await page.getByRole('button', { name: 'Older runs' }).click();
    await past.getByRole('listitem').nth(20).waitFor();
    expect(await past.getByRole('listitem').count()).toBe(21); // the one older run, no repeats
    expect(await page.getByRole('button', { name: 'Older runs' }).count()).toBe(0);
  });

  it('is keyboard operable: Tab reaches the buttons, the dialog keeps focus inside and closes on Escape', async () => {
    const agent = await anAgent('keys');
    const page = await open('#/inbox');
    modelPays(agent, { amount: 3 }, 'call_keys_1');
    await say(agent, 'pay 3');
    const review = page.getByRole('button', { name: 'Review pay request' });
    await review.waitFor();
    const focusedLabel = () =>
      page.evaluate<string | null>('document.activeElement?.getAttribute("aria-label") ?? null');
    let reached = false;
    for (let i = 0; i < 20 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = (await focusedLabel()) === 'Review pay request';
    }
    expect(reached).toBe(true);
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: /wants to run pay/ });
    await dialog.waitFor();
    const inDialog = () => page.evaluate<boolean>('!!document.activeElement?.closest("dialog")');
    const names = new Set<string>();
    for (let i = 0; i < 20; i++) {
      expect(await inDialog()).toBe(true);
      names.add(await page.evaluate<string>('document.activeElement?.textContent?.trim() ?? ""'));
      await page.keyboard.press('Tab');
    }
    for (const n of ['Approve once', 'Approve for…', 'Approve for scope', 'Deny'])
      expect(names).toContain(n);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect(await focusedLabel()).toBe('Review pay request');
  });

  it('the audit log filters by agent, tool, decision, channel and time on the server, newest first', async () => {
    const agent = await anAgent('audited');
    const page = await open('#/inbox');
    modelPays(agent, { amount: 7 }, 'call_audit_1');
    await say(agent, 'pay 7');
    await page.getByRole('button', { name: 'Review pay request' }).waitFor();
    const [req] = await pendingOf(agent.id);
    await api(t, 'POST', `/v1/consent/requests/${req.id}/decision`, {
      decision: 'deny',
      reason: 'audit me',
    });
    const all = (await api(t, 'GET', '/v1/consent/audit?order=desc&limit=1000')).body;
    expect(all[0].id).toBeGreaterThan(all[all.length - 1].id);
    for (const bad of ['channel=carrier-pigeon', 'decision=maybe', 'since=yesterday', 'order=up'])
      expect((await api(t, 'GET', `/v1/consent/audit?${bad}`)).status).toBe(400);

    await page.getByRole('link', { name: 'Audit' }).click();
    const table = page.getByRole('table', { name: 'Audit entries' });
    const filters = page.getByRole('form', { name: 'Filter the audit log' });
    await filters.getByLabel('Agent').selectOption({ label: agent.key });
    await filters.getByLabel('Decision').selectOption('deny');
    await filters.getByLabel('Channel').selectOption('rest');
    await filters.getByLabel('Tool').selectOption('pay');
    await table.getByText('“audit me”').waitFor();
    await page.waitForLoadState('networkidle');
    expect(await table.getByRole('row').count()).toBe(2); // the header and the one decision
    // a window in the future holds nothing
    await filters.getByLabel('From').fill('2999-01-01T00:00');
    await page.getByText('No entries match').waitFor();
  });

  /** An agent with a run, named long with a run of escapes: every title, card, cell and picker wraps or cuts it. */
  async function aLayoutAgent() {
    const agent = await anAgent('layout', {
      name: `layout ${'w'.repeat(150)}\u202E\u200B\u2060${'\u3000'.repeat(30)}end`,
    });
    await api(t, 'POST', `/v1/agents/${agent.id}/messages`, {
      messages: [{ role: 'user', content: 'hello' }],
    });
    return agent;
  }

  // one test per width: each visits every page (a page load waits for the network to go idle)
  it.each([1280, 390])('every page fits %i px wide without sideways scrolling', async (width) => {
    const agent = await aLayoutAgent();
    const pages = ['#/inbox', '#/agents', `#/agents/${agent.id}`, `#/agents/${agent.id}/edit`];
    pages.push(`#/chat/${agent.id}`, '#/grants', '#/audit');
    const page = await open('#/inbox', { width, height: 844 });
    for (const hash of pages) {
      await page.goto(`${t.baseUrl}/console/${hash}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
      const overflow = await page.evaluate(
        'document.documentElement.scrollWidth - document.documentElement.clientWidth',
      );
      expect({ hash, width, overflow }).toEqual({ hash, width, overflow: 0 });
      // the main navigation fits too (it would scroll sideways on its own)
      const nav = await page.evaluate<number>(
        'document.querySelector("nav ul").scrollWidth - document.querySelector("nav ul").clientWidth',
      );
      expect({ hash, width, nav }).toEqual({ hash, width, nav: 0 });
      if (process.env.CONSOLE_REVIEW_DIR)
        await page.screenshot({
          path: path.join(
            process.env.CONSOLE_REVIEW_DIR,
            `${width}-${hash.replace(/\W+/g, '_')}.png`,
          ),
          fullPage: true,
        });
    }
  });

  it('the consent dialog fits a phone: nothing wider than the screen', async () => {
    const agent = await aLayoutAgent();
    const phone = await open('#/inbox', { width: 390, height: 844 });
    modelPays(agent, { amount: 12.5, to: 'someone.with.a.long.name@example.com' }, 'call_phone_1');
    await say(agent, 'pay on the phone');
    await phone.getByRole('button', { name: 'Review pay request' }).click();
    const dialog = phone.getByRole('dialog', { name: /wants to run pay/ });
    await dialog.getByRole('checkbox', { name: 'to' }).check();
    const box = await dialog.boundingBox();
    expect(box!.x).toBeGreaterThanOrEqual(0);
    expect(box!.x + box!.width).toBeLessThanOrEqual(390);
    expect(
      await phone.evaluate<number>(
        'document.querySelector("dialog").scrollWidth - document.querySelector("dialog").clientWidth',
      ),
    ).toBe(0);
  });
});
