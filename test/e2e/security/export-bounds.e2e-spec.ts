import { startApp, TestApp } from '../../support/app-harness';
import { api } from '../consent-helpers';

/**
 * QA (bounds): an agent's export was as large as its history made it, while the same server refuses to
 * import a file past `agent_files.max_bytes`: a tenant could export an agent it could never import back,
 * and one export of a long history was read and built whole in memory. An export past the bound is now
 * 413 AGENT_FILE_TOO_LARGE, naming the size and the setting; its messages are read within a bounded
 * budget, so a history many times the bound is refused without being read whole.
 */
describe('security: an agent export stays within what the server imports', () => {
  let t: TestApp;
  const A = 'key-tenant-a';
  const MAX_BYTES = 50_000;

  beforeAll(async () => {
    t = await startApp({
      overrides: {
        auth: { api_keys: [{ key: A, tenant: 'tenant-a' }] },
        agent_files: { max_bytes: MAX_BYTES },
      },
    });
  });
  afterAll(() => t.close());

  const agentWithHistory = async (messages: number, chars: number) => {
    const res = await api(
      t,
      'POST',
      '/v1/agents/',
      {
        initial_message_sequence: Array.from({ length: messages }, (_, i) => ({
          role: 'user',
          content: `${i} ${'h'.repeat(chars)}`,
        })),
      },
      A,
    );
    expect(res.status).toBe(200);
    return res.body.id as string;
  };
  const importFile = async (file: unknown) => {
    const form = new FormData();
    form.append('file', new Blob([JSON.stringify(file)], { type: 'application/json' }), 'a.af');
    const res = await fetch(`${t.baseUrl}/v1/agents/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${A}` },
      body: form,
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const expectTooLarge = (
    res: {
      status: number;
      body: { code: string; message: string; details: Record<string, unknown> };
    },
    bytes: 'exact' | 'more',
  ) => {
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('AGENT_FILE_TOO_LARGE');
    expect(res.body.message).toContain('agent_files.max_bytes');
    expect(res.body.details).toMatchObject({
      limit: 'agent_files.max_bytes',
      max_bytes: MAX_BYTES,
    });
    if (bytes === 'exact') expect(res.body.details.bytes as number).toBeGreaterThan(MAX_BYTES);
    else expect(res.body.details.bytes).toBeNull();
  };

  it('a history a little past the bound: 413 with the file size, not a file the import would refuse', async () => {
    const id = await agentWithHistory(3, 20_000);
    const res = await api(t, 'GET', `/v1/agents/${id}/export`, undefined, A);
    expectTooLarge(res, 'exact');
    expect(res.body.message).toContain(`would be ${res.body.details.bytes} bytes`);
    // the same through the several-agents export
    expectTooLarge(await api(t, 'POST', '/v1/agents/export', { agent_ids: [id] }, A), 'exact');
  });

  it('a history many times the bound: 413 at once, its messages not read whole', async () => {
    const id = await agentWithHistory(40, 20_000);
    expectTooLarge(await api(t, 'GET', `/v1/agents/${id}/export`, undefined, A), 'more');
  });

  it('scrub_messages=true: the same agent exports within the bound, and that file imports', async () => {
    const id = await agentWithHistory(40, 20_000);
    const file = await api(t, 'GET', `/v1/agents/${id}/export?scrub_messages=true`, undefined, A);
    expect(file.status).toBe(200);
    expect(Buffer.byteLength(JSON.stringify(file.body))).toBeLessThanOrEqual(MAX_BYTES);
    expect((await importFile(file.body)).status).toBe(200);
  });

  it('a history within the bound exports with its messages and imports back', async () => {
    const id = await agentWithHistory(3, 1000);
    const file = await api(t, 'GET', `/v1/agents/${id}/export`, undefined, A);
    expect(file.status).toBe(200);
    expect(file.body.agents[0].messages.length).toBeGreaterThan(3);
    const imported = await importFile(file.body);
    expect(imported.status).toBe(200);
  });
});
