/* eslint-disable @typescript-eslint/no-explicit-any */
import * as path from 'node:path';
import { startApp, TestApp } from '../support/app-harness';
import { createAgent } from '../support/processing-fixtures';

/**
 * Issue 11 item 10: an older, Fern-generated Letta client (0.0.x, the one the Vercel provider bundles)
 * against agents that carry our own rule types beside Letta's. It parses responses with
 * `skipValidation`, so unknown rule objects must come through as they are, and Letta's own calls work.
 */
const legacyDir = path.join(
  __dirname,
  '../../node_modules/@letta-ai/vercel-ai-sdk-provider/node_modules/@letta-ai/letta-client',
);
// eslint-disable-next-line @typescript-eslint/no-require-imports
const legacy = require(legacyDir);

describe('clients: an older Letta SDK (0.0.x) and our rule types', () => {
  let t: TestApp;
  let client: any;
  const ours = [
    { type: 'requires_consent', tool_name: 'core_memory_append', scope: 'memory' },
    { type: 'cooldown', tool_name: 'core_memory_replace', seconds: 60 },
    { type: 'dedupe', tool_name: '*', window_seconds: 300, mode: 'reject' },
    { type: 'exclusive_group', tools: ['core_memory_append', 'core_memory_replace'] },
    { type: 'max_count_per_step', tool_name: '*', max_count_limit: 5 },
  ];

  // the old client reports what it could not validate with console.warn: kept, and asserted below
  const warned: string[] = [];
  beforeAll(async () => {
    jest.spyOn(console, 'warn').mockImplementation((m: unknown) => void warned.push(String(m)));
    t = await startApp();
    client = new legacy.LettaClient({ baseUrl: t.baseUrl, token: 'none' });
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await t.close();
  });

  it('is the old generation of the client', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    expect(require(path.join(legacyDir, 'package.json')).version).toMatch(/^0\.0\./);
  });

  it('retrieve and list: our rule types arrive whole beside Letta’s, nothing thrown', async () => {
    const id = await createAgent(t, null, {
      tool_rules: [...ours, { type: 'exit_loop', tool_name: 'send_message' }],
      // the rules given only, without Letta's base ones
      include_base_tool_rules: false,
    });
    warned.length = 0;
    const agent = await client.agents.retrieve(id);
    // one warning per unknown rule object, which it then passes through untransformed (snake_case keys)
    expect(warned.join('\n')).toMatch(/Failed to validate[\s\S]*Received "cooldown"/);
    const byType = Object.fromEntries(agent.toolRules.map((r: any) => [r.type, r]));
    expect(byType.exit_loop).toMatchObject({ toolName: 'send_message' });
    expect(byType.cooldown).toEqual(ours[1]);
    expect(byType.dedupe).toMatchObject({ mode: 'reject' });
    expect(byType.exclusive_group.tools).toEqual(['core_memory_append', 'core_memory_replace']);
    expect(byType.requires_consent).toBeDefined();
    expect(agent.toolRules).toHaveLength(ours.length + 1);
    const listed = await client.agents.list();
    expect(listed.map((a: any) => a.id)).toContain(id);
  });

  it('create, modify and message an agent with Letta’s own rules through the old client', async () => {
    const created = await client.agents.create({
      name: 'legacy-client-agent',
      system: 'You echo.',
      model: 'scripted/default',
      toolRules: [{ type: 'exit_loop', toolName: 'send_message' }],
    });
    // the given rule, then Letta's base rules for the other base tools (send_message's is not repeated)
    expect(created.toolRules).toEqual([
      { type: 'exit_loop', toolName: 'send_message' },
      { type: 'continue_loop', toolName: 'core_memory_append' },
      { type: 'continue_loop', toolName: 'core_memory_replace' },
      { type: 'continue_loop', toolName: 'conversation_search' },
    ]);
    const modified = await client.agents.modify(created.id, { description: 'changed' });
    expect(modified.description).toBe('changed');
    const res = await client.agents.messages.create(created.id, {
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(res.messages.length).toBeGreaterThan(0);
    expect(res.stopReason?.stopReason ?? res.stop_reason).toBeDefined();
  });

  it('the old client itself refuses to send our rule types (its request schemas are closed): declare them over REST or the 1.x SDK', async () => {
    await expect(
      client.agents.create({ name: 'legacy-ours', toolRules: [ours[1]] }),
    ).rejects.toThrow(/toolRules/);
  });
});
