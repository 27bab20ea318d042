import Letta from '@letta-ai/letta-client';
import { Logger } from '@nestjs/common';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { projectRoot } from '../../src/config/app-config';
import { startApp } from '../support/app-harness';

type Json = Record<string, unknown>;

const AGENT = `
name: helper
description: first version
tools: [send_message]
include_base_tools: false
tool_rules:
  - { type: exit_loop, tool_name: send_message }
memory_blocks:
  - { label: persona, value: I help. }
model: scripted/helper
tags: [files]
model_script:
  - tool_calls: [{ name: send_message, arguments: { message: hi } }]
`;

/**
 * Agents in config/agents/*.yaml are upserted by name at boot, among the agents files created; a broken file
 * stops the boot, and an agent a tenant created over the API is never taken over.
 */
describe('agent files', () => {
  const dirs: string[] = [];
  const newDir = () => {
    const d = mkdtempSync(path.join(tmpdir(), 'agent-files-'));
    mkdirSync(path.join(d, 'agents'));
    mkdirSync(path.join(d, 'tools'));
    dirs.push(d);
    return d;
  };
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  const listAll = async (baseURL: string) => {
    const client = new Letta({ baseURL, apiKey: 'x', maxRetries: 0 });
    return (await client.agents.list()).getPaginatedItems() as unknown as Json[];
  };

  it('loads a file, keeps it untouched on restart, and applies an edit', async () => {
    const dir = newDir();
    const file = path.join(dir, 'agents', 'helper.yaml');
    writeFileSync(file, AGENT);

    let t = await startApp({ dir });
    const [first] = await listAll(t.baseUrl);
    expect(first).toMatchObject({
      name: 'helper',
      description: 'first version',
      model: 'scripted/helper',
      source: 'file',
      tags: ['files'],
      tool_rules: [{ type: 'exit_loop', tool_name: 'send_message' }],
    });
    await t.close();

    t = await startApp({ dir });
    const again = await listAll(t.baseUrl);
    expect(again).toHaveLength(1);
    expect(again[0]).toEqual(first); // same id, same updated_at, same block ids
    await t.close();

    writeFileSync(file, AGENT.replace('first version', 'second version'));
    t = await startApp({ dir });
    const edited = await listAll(t.baseUrl);
    expect(edited).toHaveLength(1);
    expect(edited[0]).toMatchObject({ id: first.id, description: 'second version' });
    expect(edited[0].updated_at).not.toBe(first.updated_at);
    expect((edited[0].memory as Json).blocks).toEqual((first.memory as Json).blocks);
    await t.close();
  });

  it("changes made over the API stay until the file changes; the name is the file's (a rename is a 400, so a restart never makes a second agent)", async () => {
    const dir = newDir();
    const file = path.join(dir, 'agents', 'helper.yaml');
    writeFileSync(file, AGENT);
    writeFileSync(path.join(dir, 'agents', 'other.yaml'), 'name: other\nmodel: scripted/helper\n');
    const patch = (baseUrl: string, p: string, body: unknown) =>
      fetch(`${baseUrl}${p}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Json }));

    let t = await startApp({ dir });
    const helper = (await listAll(t.baseUrl)).find((a) => a.name === 'helper')!;
    expect(
      (await patch(t.baseUrl, `/v1/agents/${String(helper.id)}`, { description: 'mine' })).status,
    ).toBe(200);
    expect(
      (
        await patch(t.baseUrl, `/v1/agents/${String(helper.id)}/core-memory/blocks/persona`, {
          value: 'I help, briefly.',
        })
      ).status,
    ).toBe(200);
    // its file finds it by name: renaming it (to a new name, or to another file agent's) is refused
    for (const name of ['renamed', 'other']) {
      const res = await patch(t.baseUrl, `/v1/agents/${String(helper.id)}`, {
        name,
        description: 'not this',
      });
      expect(res).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
      expect(res.body.details).toMatchObject({ problems: [{ path: 'name' }] });
    }
    // the same name, as a client sends the agent it read back, is fine
    expect(
      (await patch(t.baseUrl, `/v1/agents/${String(helper.id)}`, { name: 'helper' })).status,
    ).toBe(200);
    const changed = (await listAll(t.baseUrl)).find((a) => a.id === helper.id)!;
    expect(changed).toMatchObject({ name: 'helper', description: 'mine', source: 'file' });
    await t.close();

    // a restart with the same files keeps what the API changed, and makes no second agent
    t = await startApp({ dir });
    let agents = await listAll(t.baseUrl);
    expect(agents.map((a) => a.name).sort()).toEqual(['helper', 'other']);
    expect(agents.find((a) => a.id === helper.id)).toEqual(changed);
    await t.close();

    // the file changed: its content replaces the agent's
    writeFileSync(file, AGENT.replace('first version', 'second version'));
    t = await startApp({ dir });
    agents = await listAll(t.baseUrl);
    expect(agents).toHaveLength(2);
    const edited = agents.find((a) => a.id === helper.id)!;
    expect(edited.description).toBe('second version');
    expect((edited.memory as { blocks: Json[] }).blocks).toMatchObject([
      { label: 'persona', value: 'I help.' },
    ]);

    // deleted over the API while its file is there, it is made again at the next boot (a new id)
    const del = await fetch(`${t.baseUrl}/v1/agents/${String(helper.id)}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    await t.close();
    t = await startApp({ dir });
    agents = await listAll(t.baseUrl);
    expect(agents.map((a) => a.name).sort()).toEqual(['helper', 'other']);
    expect(agents.find((a) => a.name === 'helper')).toMatchObject({
      description: 'second version',
      source: 'file',
    });
    expect(agents.find((a) => a.id === helper.id)).toBeUndefined();
    await t.close();
  });

  it("a file's tool_executor settings are the agent's, over the config's (issue 3: create, update and agent files alike)", async () => {
    const dir = newDir();
    writeFileSync(
      path.join(dir, 'agents', 'settings.yaml'),
      AGENT.replace('name: helper', 'name: settings') +
        'tool_executor: { tool_timeout_seconds: 7, dedupe_window_seconds: 0 }\n',
    );
    const t = await startApp({
      dir,
      overrides: { tool_executor: { consent_timeout_seconds: 90 } },
    });
    try {
      const [agent] = await listAll(t.baseUrl);
      expect(agent.tool_executor).toEqual({
        tool_timeout_seconds: 7,
        consent_timeout_seconds: 90,
        dedupe_window_seconds: 0,
      });
    } finally {
      await t.close();
    }
  });

  it('a file names its agent_type: its base tools and loop', async () => {
    const dir = newDir();
    writeFileSync(
      path.join(dir, 'agents', 'v1.yaml'),
      'name: v1\nagent_type: letta_v1_agent\nmodel: scripted/helper\ntimezone: Asia/Tokyo\n',
    );
    const t = await startApp({ dir });
    const [agent] = await listAll(t.baseUrl);
    expect(agent.agent_type).toBe('letta_v1_agent');
    expect(agent.timezone).toBe('Asia/Tokyo');
    expect((agent.tools as Json[]).map((x) => x.name)).toEqual([
      'memory_replace',
      'memory_insert',
      'conversation_search',
    ]);
    await t.close();
  });

  it("a file agent gets Letta's base tool rules as on create, unchanged by a restart; include_base_tool_rules: false adds none", async () => {
    const dir = newDir();
    writeFileSync(
      path.join(dir, 'agents', 'memgpt.yaml'),
      'name: memgpt\nmodel: scripted/helper\n',
    );
    writeFileSync(
      path.join(dir, 'agents', 'bare.yaml'),
      'name: bare\nmodel: scripted/helper\ninclude_base_tool_rules: false\n',
    );
    let t = await startApp({ dir });
    const first = new Map((await listAll(t.baseUrl)).map((a) => [a.name, a]));
    expect(first.get('memgpt')!.tool_rules).toEqual([
      { type: 'exit_loop', tool_name: 'send_message' },
      { type: 'continue_loop', tool_name: 'core_memory_append' },
      { type: 'continue_loop', tool_name: 'core_memory_replace' },
      { type: 'continue_loop', tool_name: 'conversation_search' },
    ]);
    expect(first.get('bare')!.tool_rules).toEqual([]);
    await t.close();

    t = await startApp({ dir });
    const again = new Map((await listAll(t.baseUrl)).map((a) => [a.name, a]));
    expect(again.get('memgpt')).toEqual(first.get('memgpt')); // same rules, same updated_at
    expect(again.get('bare')).toEqual(first.get('bare'));
    await t.close();
  });

  it.each([
    ['yaml syntax', 'name: [oops', /bad\.yaml.*yaml/],
    [
      'an agent_type this server does not run',
      'name: x\nagent_type: sleeptime_agent',
      /bad\.yaml: agent_type: must be one of memgpt_agent, memgpt_v2_agent, letta_v1_agent/,
    ],
    ['missing name', 'description: nameless', /bad\.yaml: name: is required/],
    [
      'a time zone that is not one',
      'name: x\ntimezone: Mars/Olympus',
      /bad\.yaml: timezone: must be an IANA time zone name/,
    ],
    [
      'unknown rule type',
      'name: x\ntool_rules: [{ type: teleport, tool_name: send_message }]',
      /bad\.yaml: tool_rules\[0\]\.type: unknown rule type/,
    ],
    [
      'rule names a missing tool',
      'name: x\ntool_rules: [{ type: exit_loop, tool_name: deploy }]',
      /bad\.yaml: tool_rules\[0\]\.tool_name: .*deploy/,
    ],
    [
      'api key in llm_config',
      'name: x\nllm_config: { api_key: sk-1 }',
      /bad\.yaml: llm_config\.api_key/,
    ],
    ['not a mapping', '- a\n- b', /bad\.yaml: \(document\)/],
    [
      'a misspelled field, with the other problems',
      'name: x\nsytem: hi\ntool_rules: [{ type: teleport, tool_name: send_message }]',
      /bad\.yaml: sytem: unknown key \(did you mean "system"\?\); tool_rules\[0\]\.type: unknown rule type/,
    ],
    [
      '25 unknown fields: the first 20 named, the rest counted',
      ['name: x', ...Array.from({ length: 25 }, (_, i) => `oops_${i}: 1`)].join('\n'),
      /bad\.yaml: oops_0: unknown key.*oops_19: unknown key; and 5 more$/,
    ],
  ])(
    'a broken file (%s) stops the boot naming file, field and reason',
    async (_n, content, message) => {
      const dir = newDir();
      writeFileSync(path.join(dir, 'agents', 'bad.yaml'), content);
      await expect(startApp({ dir })).rejects.toThrow(message);
    },
  );

  it('two files with one name stop the boot', async () => {
    const dir = newDir();
    writeFileSync(path.join(dir, 'agents', 'a.yaml'), 'name: same');
    writeFileSync(path.join(dir, 'agents', 'b.yaml'), 'name: same');
    await expect(startApp({ dir })).rejects.toThrow(/b\.yaml: name: "same" is also used by/);
  });

  /** A tenant's agent named like a file's, created over the API (open mode: tenant default). */
  const createOverApi = async (baseUrl: string, name: string): Promise<Json> => {
    const res = await fetch(`${baseUrl}/v1/agents/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name,
        system: "the tenant's own prompt",
        description: "the tenant's agent",
        model: 'scripted/helper',
        include_base_tools: false,
      }),
    });
    expect(res.status).toBe(200);
    // as a list shows it: lists answer no message_ids (each would read the agent's context)
    return { ...((await res.json()) as Json), message_ids: null };
  };

  it("a tenant's API agent named like a file's is never taken over, and never keeps the operator's agent from booting", async () => {
    const dir = newDir();
    let t = await startApp({ dir });
    const tenants = await createOverApi(t.baseUrl, 'helper');
    await t.close();

    // the operator adds a file whose agent has that name: the boot goes on and says so
    const file = path.join(dir, 'agents', 'helper.yaml');
    writeFileSync(file, AGENT);
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    let warned: string[];
    try {
      t = await startApp({ dir });
    } finally {
      warned = warn.mock.calls.map((c) => String(c[0]));
      warn.mockRestore();
    }
    const agents = await listAll(t.baseUrl);
    const fromFile = agents.find((a) => a.source === 'file');
    expect(fromFile).toMatchObject({ name: 'helper', description: 'first version' });
    expect(agents.find((a) => a.id === tenants.id)).toEqual(tenants);
    expect(warned).toContainEqual(
      expect.stringContaining(
        `agent file ${file}: created agent ${String(fromFile?.id)} named "helper", beside agent ${String(tenants.id)} of the same name created over the API`,
      ),
    );
    await t.close();

    // re-boots keep both as they are
    t = await startApp({ dir });
    const again = await listAll(t.baseUrl);
    expect(again.find((a) => a.id === tenants.id)).toEqual(tenants);
    expect(again.find((a) => a.id === fromFile?.id)).toEqual(fromFile);
    expect(again).toHaveLength(2);
    await t.close();
  });

  it("the file's agent is its own: an API agent of the same name made later is left alone, and re-boots change nothing", async () => {
    const dir = newDir();
    const file = path.join(dir, 'agents', 'helper.yaml');
    writeFileSync(file, AGENT);
    let t = await startApp({ dir });
    const [fromFile] = await listAll(t.baseUrl);
    // API agents may share names, as in Letta
    const tenants = await createOverApi(t.baseUrl, 'helper');
    await t.close();

    t = await startApp({ dir });
    const byId = async () => new Map((await listAll(t.baseUrl)).map((a) => [a.id, a]));
    let now = await byId();
    expect(now.get(fromFile.id as string)).toEqual(fromFile);
    expect(now.get(tenants.id as string)).toEqual(tenants);
    await t.close();

    writeFileSync(file, AGENT.replace('first version', 'second version'));
    t = await startApp({ dir });
    now = await byId();
    expect(now.get(fromFile.id as string)).toMatchObject({ description: 'second version' });
    expect(now.get(tenants.id as string)).toEqual(tenants);
    await t.close();
  });

  it('the shipped examples load, with their tools and rules', async () => {
    const dir = newDir();
    cpSync(path.join(projectRoot(), 'config', 'agents'), path.join(dir, 'agents'), {
      recursive: true,
    });
    cpSync(path.join(projectRoot(), 'config', 'tools'), path.join(dir, 'tools'), {
      recursive: true,
    });
    const t = await startApp({ dir });
    try {
      const agents = await listAll(t.baseUrl);
      const byName = new Map(agents.map((a) => [a.name, a]));
      expect([...byName.keys()].sort()).toEqual(['refund-desk', 'release-bot']);
      const refund = byName.get('refund-desk')!;
      expect((refund.tools as Json[]).map((x) => x.name)).toEqual(
        expect.arrayContaining(['lookup_order', 'issue_refund', 'send_message']),
      );
      expect(refund.tool_rules).toContainEqual({
        type: 'max_count_per_step',
        tool_name: 'issue_refund',
        max_count_limit: 3,
      });
      expect(byName.get('release-bot')!.tool_rules).toContainEqual({
        type: 'requires_preceding_tools',
        tool_name: 'deploy',
        tools: ['run_tests'],
      });
    } finally {
      await t.close();
    }
  });
});
