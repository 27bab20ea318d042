/* eslint-disable @typescript-eslint/no-explicit-any */
import Letta from '@letta-ai/letta-client';
import { rmSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options';
import type { TestApp } from '../support/app-harness';
import { startApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import { api, createAgent, LoopEnv, say, startLoopEnv } from '../support/processing-fixtures';

/**
 * Letta's agent fields a client sets and reads back (`timezone`, `initial_message_sequence`, …): kept,
 * answered on the AgentState and used where Letta uses them, through Letta's SDK and over REST.
 */
describe("Letta's agent fields", () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let client: Letta;

  beforeAll(async () => {
    env = await startLoopEnv();
    ({ t, fake } = env);
    client = new Letta({ baseURL: t.baseUrl, apiKey: 'x', maxRetries: 0 });
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const fakeModel = () => ({
    model: 'fake',
    model_endpoint_type: 'openai',
    model_endpoint: fake.baseUrl,
    context_window: 8000,
  });

  describe('timezone', () => {
    it("is kept, answered and changed through the SDK; UTC by default, as Letta's", async () => {
      const plain = await client.agents.create({ name: 'tz-default', model: 'scripted/default' });
      expect(plain.timezone).toBe('UTC');

      const agent = await client.agents.create({
        name: 'tz-la',
        model: 'scripted/default',
        timezone: 'America/Los_Angeles',
      });
      expect(agent.timezone).toBe('America/Los_Angeles');
      expect((await client.agents.retrieve(agent.id)).timezone).toBe('America/Los_Angeles');
      const listed = (await client.agents.list({ name: 'tz-la' })).getPaginatedItems();
      expect(listed.map((a) => a.timezone)).toEqual(['America/Los_Angeles']);

      const moved = await client.agents.update(agent.id, { timezone: 'Asia/Tokyo' });
      expect(moved.timezone).toBe('Asia/Tokyo');
      // an update without it (or with null) keeps it, as Letta's does
      expect((await client.agents.update(agent.id, { description: 'x' })).timezone).toBe(
        'Asia/Tokyo',
      );
      expect((await client.agents.update(agent.id, { timezone: null })).timezone).toBe(
        'Asia/Tokyo',
      );
    });

    it('a name that is not an IANA time zone is a 400 naming the field; nothing changes', async () => {
      const bad = await api(t, 'POST', '/v1/agents/', { name: 'tz-bad', timezone: 'Mars/Olympus' });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: {
          problems: [{ path: 'timezone', message: expect.stringContaining('IANA time zone') }],
        },
      });
      const offset = await api(t, 'POST', '/v1/agents/', { name: 'tz-bad', timezone: '+02:00' });
      expect(offset.status).toBe(400);

      const agent = await client.agents.create({ name: 'tz-kept', timezone: 'Europe/Paris' });
      await expect(client.agents.update(agent.id, { timezone: 'Not/AZone' })).rejects.toMatchObject(
        { status: 400 },
      );
      expect((await client.agents.retrieve(agent.id)).timezone).toBe('Europe/Paris');
    });

    it("a heartbeat's time is written in the agent's zone (Letta's get_local_time format)", async () => {
      const id = await createAgent(t, fake, {
        llm_config: fakeModel(),
        timezone: 'America/Los_Angeles',
        // conversation_search's base continue_loop rule would go on without a heartbeat message
        include_base_tool_rules: false,
      });
      fake.push(
        {
          tool_calls: [
            { name: 'conversation_search', arguments: { query: 'x', request_heartbeat: true } },
          ],
        },
        { tool_calls: [{ name: 'send_message', arguments: { message: 'done' } }] },
      );
      const res = await api(t, 'POST', `/v1/agents/${id}/messages`, say('note this'));
      expect(res.status).toBe(200);
      const written = (await api(t, 'GET', `/v1/runs/${res.body.run_id}/messages`)).body;
      const heartbeat = written.find(
        (m: any) => m.message_type === 'user_message' && String(m.content).includes('"heartbeat"'),
      );
      expect(JSON.parse(heartbeat.content).time).toMatch(
        /^\d{4}-\d\d-\d\d (0\d|1[0-2]):\d\d:\d\d [AP]M P[SD]T-0[78]00$/,
      );
      // the model read it so
      expect(JSON.stringify(fake.requests.at(-1)!.messages)).toMatch(/P[SD]T-0[78]00/);
    });

    it("a built-in tool's return (its time) and conversation_search's dates are in the agent's zone", async () => {
      const id = await createAgent(t, fake, { llm_config: fakeModel(), timezone: 'Asia/Kolkata' });
      fake.push({ tool_calls: [{ name: 'send_message', arguments: { message: 'noted' } }] });
      await api(t, 'POST', `/v1/agents/${id}/messages`, say('apples are red'));
      fake.push(
        { tool_calls: [{ name: 'conversation_search', arguments: { query: 'apples' } }] },
        { tool_calls: [{ name: 'send_message', arguments: { message: 'found' } }] },
      );
      const res = await api(t, 'POST', `/v1/agents/${id}/messages`, {
        ...say('what colour were the apples?'),
        use_assistant_message: false,
      });
      const ret = res.body.messages.find((m: any) => m.message_type === 'tool_return_message');
      // Letta's package_function_response: {status, message, time}
      const packaged = JSON.parse(ret.tool_return);
      expect(packaged.status).toBe('OK');
      expect(packaged.time).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [AP]M \+0530\+0530$/);
      const hits = JSON.parse(packaged.message);
      const found = hits.find((h: any) => h.content === 'apples are red');
      expect(found).toMatchObject({ role: 'user' });
      expect(found.date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+05:30$/);
    });
  });

  describe('initial_message_sequence', () => {
    const history = async (id: string) =>
      (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&limit=100`)).body;

    it("replaces the default starting history: the messages are the agent's first, listed, in context and sent to the model", async () => {
      const agent = await client.agents.create({
        name: 'seeded',
        llm_config: fakeModel() as any,
        initial_message_sequence: [
          { role: 'system', content: 'The user prefers short answers.' },
          { role: 'user', content: 'My name is Ada.' },
          { role: 'assistant', content: 'Nice to meet you, Ada.', otid: 'otid-seed-1' },
          { role: 'user', content: [{ type: 'text', text: 'I like tea.' }] },
        ],
      });
      const listed = (await client.agents.messages.list(agent.id, { order: 'asc' }))
        .getPaginatedItems()
        .map((m: any) => [m.message_type, m.content]);
      expect(listed).toEqual([
        ['system_message', 'The user prefers short answers.'],
        ['user_message', 'My name is Ada.'],
        ['assistant_message', 'Nice to meet you, Ada.'],
        ['user_message', 'I like tea.'],
      ]);
      const seeded = await history(agent.id);
      expect(seeded[2]).toMatchObject({ otid: 'otid-seed-1', run_id: null, step_id: null });
      // Letta's message_ids: the agent's in-context messages
      expect((await client.agents.retrieve(agent.id)).message_ids).toEqual(
        seeded.map((m: any) => m.id),
      );

      fake.push({ tool_calls: [{ name: 'send_message', arguments: { message: 'Hi Ada.' } }] });
      await client.agents.messages.create(agent.id, {
        messages: [{ role: 'user', content: 'Hello?' }],
      });
      const sent = fake.requests.at(-1)!.messages.map((m: any) => [m.role, m.content]);
      expect(sent[0][0]).toBe('system');
      expect(sent.slice(1, 6)).toEqual([
        ['user', 'The user prefers short answers.'],
        ['user', 'My name is Ada.'],
        ['assistant', 'Nice to meet you, Ada.'],
        ['user', 'I like tea.'],
        ['user', 'Hello?'],
      ]);
    });

    it('an empty list starts the agent with no messages; an update does not take one', async () => {
      const agent = await client.agents.create({
        name: 'blank',
        model: 'scripted/default',
        initial_message_sequence: [],
      });
      expect(await history(agent.id)).toEqual([]);
      const updated = await api(t, 'PATCH', `/v1/agents/${agent.id}`, {
        initial_message_sequence: [{ role: 'user', content: 'late' }],
      });
      expect(updated.status).toBe(200);
      expect(await history(agent.id)).toEqual([]);
    });

    it('a message that is not a MessageCreate, or too many, is a 400 at its path and no agent is made', async () => {
      const names = async () =>
        (await api(t, 'GET', '/v1/agents/?name=refused')).body.map((a: any) => a.name);
      const bad = await api(t, 'POST', '/v1/agents/', {
        name: 'refused',
        initial_message_sequence: [
          { role: 'user', content: 'fine' },
          { role: 'tool', content: 'no' },
          { role: 'assistant', content: 42 },
        ],
      });
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe('VALIDATION_FAILED');
      expect(bad.body.details.problems.map((p: any) => p.path)).toEqual([
        'initial_message_sequence[1].role',
        'initial_message_sequence[2].content',
      ]);
      const notList = await api(t, 'POST', '/v1/agents/', {
        name: 'refused',
        initial_message_sequence: 'hello',
      });
      expect(notList.status).toBe(400);

      const max = t.config.limits.max_initial_messages;
      const many = await api(t, 'POST', '/v1/agents/', {
        name: 'refused',
        initial_message_sequence: Array.from({ length: max + 1 }, (_, i) => ({
          role: 'user',
          content: `m${i}`,
        })),
      });
      expect(many.status).toBe(400);
      expect(many.body).toMatchObject({
        code: 'LIMIT_EXCEEDED',
        details: { limits: ['limits.max_initial_messages'] },
      });
      expect(await names()).toEqual([]);
    });
  });

  describe("the rest of Letta's AgentState", () => {
    it('message_ids: a create, an update and an attach or detach answer them as a retrieve does (Letta answers its AgentState)', async () => {
      const created = await client.agents.create({
        name: 'ids',
        llm_config: fakeModel() as any,
        initial_message_sequence: [{ role: 'user', content: 'My name is Ada.' }],
      });
      const ids = (await client.agents.retrieve(created.id)).message_ids;
      expect(ids).toHaveLength(1);
      expect(created.message_ids).toEqual(ids);
      const updated = await client.agents.update(created.id, { description: 'changed' });
      expect(updated.message_ids).toEqual(ids);
      const block = await client.blocks.create({ label: 'notes', value: 'n' });
      expect(
        (await client.agents.blocks.attach(block.id, { agent_id: created.id })).message_ids,
      ).toEqual(ids);
      expect(
        (await client.agents.blocks.detach(block.id, { agent_id: created.id })).message_ids,
      ).toEqual(ids);
    });

    it('model_settings answers what the model calls are made with (as Letta derives it from llm_config)', async () => {
      const agent = (await client.agents.create({
        name: 'settings',
        model: 'openai/gpt-4o-mini',
        model_settings: { provider_type: 'openai', temperature: 0.2, max_output_tokens: 500 },
      })) as any;
      expect(agent.model_settings).toEqual({
        provider_type: 'openai',
        temperature: 0.2,
        max_output_tokens: 500,
        parallel_tool_calls: true,
      });
      const moved = (await client.agents.update(agent.id, {
        model_settings: { provider_type: 'openai', temperature: 1.1 },
      })) as any;
      expect(moved.model_settings).toMatchObject({ temperature: 1.1, max_output_tokens: 500 });
    });

    it('hidden: kept and answered; a hidden agent is listed only with show_hidden_agents, as Letta lists', async () => {
      const hidden = await client.agents.create({ name: 'shy', hidden: true });
      expect(hidden.hidden).toBe(true);
      const names = async (query = '') =>
        (await api(t, 'GET', `/v1/agents/?name=shy${query}`)).body.map((a: any) => a.id);
      expect(await names()).toEqual([]);
      expect(await names('&show_hidden_agents=true')).toEqual([hidden.id]);
      expect((await client.agents.retrieve(hidden.id)).hidden).toBe(true);
      expect((await client.agents.update(hidden.id, { hidden: false })).hidden).toBe(false);
      expect(await names()).toEqual([hidden.id]);
      const plain = await client.agents.create({ name: 'plain' });
      expect(plain.hidden).toBeNull();
      expect((await api(t, 'GET', '/v1/agents/?show_hidden_agents=maybe')).status).toBe(400);
    });

    it("file settings: kept and answered, else Letta's defaults for the context window", async () => {
      const small = await client.agents.create({
        name: 'files-default',
        llm_config: fakeModel() as any,
      });
      expect(small).toMatchObject({ max_files_open: 3, per_file_view_window_char_limit: 5000 });
      const set = await client.agents.create({
        name: 'files-set',
        max_files_open: 7,
        per_file_view_window_char_limit: 12345,
      });
      expect(set).toMatchObject({ max_files_open: 7, per_file_view_window_char_limit: 12345 });
      const kept = await client.agents.update(set.id, { max_files_open: 2 });
      expect(kept).toMatchObject({ max_files_open: 2, per_file_view_window_char_limit: 12345 });
      const bad = await api(t, 'POST', '/v1/agents/', { name: 'files-bad', max_files_open: 1001 });
      expect(bad.status).toBe(400);
      expect(bad.body.details.problems[0].path).toBe('max_files_open');
    });

    it('last_run_completion and last_run_duration_ms: null until a run ends, then its end and length', async () => {
      const id = await createAgent(t, fake, { llm_config: fakeModel() });
      const before = await client.agents.retrieve(id);
      expect(before.last_run_completion).toBeNull();
      expect(before.last_run_duration_ms).toBeNull();
      fake.push({ tool_calls: [{ name: 'send_message', arguments: { message: 'hi' } }] });
      const sentAt = Date.now();
      await api(t, 'POST', `/v1/agents/${id}/messages`, say('hello'));
      const after = await client.agents.retrieve(id);
      expect(Date.parse(after.last_run_completion!)).toBeGreaterThanOrEqual(sentAt - 1000);
      expect(after.last_run_duration_ms).toEqual(expect.any(Number));
      expect(after.last_run_duration_ms!).toBeGreaterThanOrEqual(0);
      expect(after.last_stop_reason).toBe('end_turn');
    });

    it('what this server does not do is answered so: message_buffer_autoclear is refused, sleep-time is false, no Cloud ids', async () => {
      const refused = await api(t, 'POST', '/v1/agents/', {
        name: 'autoclear',
        message_buffer_autoclear: true,
      });
      expect(refused.status).toBe(400);
      expect(refused.body.details.problems).toEqual([
        { path: 'message_buffer_autoclear', message: expect.stringContaining('not supported') },
      ]);
      const agent = await client.agents.create({
        name: 'sleepy',
        message_buffer_autoclear: false,
        enable_sleeptime: true,
      });
      expect(agent).toMatchObject({
        message_buffer_autoclear: false,
        enable_sleeptime: false,
        response_format: null,
        compaction_settings: null,
        project_id: null,
        template_id: null,
        base_template_id: null,
        deployment_id: null,
        entity_id: null,
        created_by_id: null,
        last_updated_by_id: null,
      });
      const update = await api(t, 'PATCH', `/v1/agents/${agent.id}`, {
        message_buffer_autoclear: true,
      });
      expect(update.status).toBe(400);
    });
  });
});

/** The migrations' downs drop the columns; their ups give the agents that were there Letta's defaults. */
describe('migrations: agent time zones and Letta fields', () => {
  it('down and up again: the agents stay, in UTC', async () => {
    let t = await startApp({ keepDir: true });
    const created = await api(t, 'POST', '/v1/agents/', { name: 'zoned', timezone: 'Asia/Tokyo' });
    expect(created.body.timezone).toBe('Asia/Tokyo');
    const { dir, config } = t;
    await t.close();

    const ds = new DataSource(dataSourceOptions(config));
    await ds.initialize();
    const schema = (ds.options as { schema?: string }).schema;
    const table = (name: string) =>
      ds.options.type === 'postgres' && schema ? `"${schema}"."${name}"` : `"${name}"`;
    for (;;) {
      const [last] = await ds.query<{ name: string }[]>(
        `SELECT name FROM ${table('migrations')} ORDER BY id DESC LIMIT 1`,
      );
      await ds.undoLastMigration({ transaction: 'all' });
      if (last.name === 'AgentTimezones1765110000000') break;
    }
    const [row] = await ds.query<Record<string, unknown>[]>(
      `SELECT * FROM ${table('agents')} WHERE id = '${created.body.id as string}'`,
    );
    expect(row.name).toBe('zoned');
    for (const column of ['timezone', 'hidden', 'max_files_open', 'last_run_completion'])
      expect(column in row).toBe(false);
    await ds.destroy();

    t = await startApp({ dir }); // migrated up again at boot
    try {
      const again = await api(t, 'GET', `/v1/agents/${created.body.id as string}`);
      expect(again.body).toMatchObject({
        name: 'zoned',
        timezone: 'UTC',
        hidden: null,
        last_run_completion: null,
      });
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
