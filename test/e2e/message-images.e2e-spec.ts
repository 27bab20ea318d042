/* eslint-disable @typescript-eslint/no-explicit-any */
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import { api, createAgent, LoopEnv, startLoopEnv } from '../support/processing-fixtures';

/** A 1×1 PNG. */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const image = (data = PNG, media_type = 'image/png') => ({
  type: 'image',
  source: { type: 'base64', media_type, data },
});
const ask = (content: unknown) => ({ messages: [{ role: 'user', content }] });

/** Image content parts: accepted, stored, returned, and given to vision models only. */
describe('messages with images', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;

  beforeAll(async () => {
    env = await startLoopEnv([], {
      overrides: { processing: { max_image_bytes: 2048, max_images_per_message: 2 } },
    });
    ({ t, fake } = env);
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const agentWith = (model: string) =>
    createAgent(t, fake, {
      include_base_tools: false,
      llm_config: {
        model,
        model_endpoint_type: 'openai',
        model_endpoint: fake.baseUrl,
        context_window: 8000,
      },
    });

  it('a vision model gets the image as an OpenAI image_url part; history returns the parts as sent', async () => {
    const id = await agentWith('gpt-4o-mini');
    const parts = [{ type: 'text', text: 'what is this?' }, image()];
    fake.push({ content: 'a pixel' });
    const res = await api(t, 'POST', `/v1/agents/${id}/messages`, ask(parts));
    expect(res.status).toBe(200);
    const user = fake.requests.at(-1)!.messages.at(-1);
    expect(user).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'what is this?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
      ],
    });
    const history = await api(t, 'GET', `/v1/agents/${id}/messages?order=asc`);
    expect(history.body[0]).toMatchObject({ message_type: 'user_message', content: parts });

    // the agent moves to a model without vision: the stored image reaches it as a note
    const patched = await api(t, 'PATCH', `/v1/agents/${id}`, {
      llm_config: { model: 'fake', model_endpoint_type: 'openai', model_endpoint: fake.baseUrl },
    });
    expect(patched.status).toBe(200);
    fake.push({ content: 'ok' });
    await api(t, 'POST', `/v1/agents/${id}/messages`, ask('and now?'));
    const earlier = fake.requests
      .at(-1)!
      .messages.find((m: any) => JSON.stringify(m.content).includes('what is this?'));
    expect(earlier.content).toBe(
      "what is this?[image omitted: this agent's model does not accept images]",
    );
  });

  it('images to a model that does not accept them: 400 IMAGES_NOT_SUPPORTED, nothing stored', async () => {
    const id = await agentWith('fake');
    const res = await api(t, 'POST', `/v1/agents/${id}/messages`, ask([image()]));
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('IMAGES_NOT_SUPPORTED');
    expect((await api(t, 'GET', `/v1/agents/${id}/messages`)).body).toEqual([]);
    expect(fake.requests).toHaveLength(0);
  });

  it.each([
    [
      'a URL image (the server never fetches one)',
      [{ type: 'image', source: { type: 'url', url: 'http://169.254.169.254/latest' } }],
      'messages[0].content[0].source.type',
    ],
    [
      'an unknown media type',
      [image(PNG, 'image/svg+xml')],
      'messages[0].content[0].source.media_type',
    ],
    [
      'bytes that are not the media type',
      [image(PNG, 'image/jpeg')],
      'messages[0].content[0].source.data',
    ],
    ['invalid base64', [image('not base64!')], 'messages[0].content[0].source.data'],
    [
      'an image over processing.max_image_bytes',
      [image(Buffer.concat([Buffer.from(PNG, 'base64'), Buffer.alloc(3000)]).toString('base64'))],
      'messages[0].content[0].source.data',
    ],
    [
      'more images than processing.max_images_per_message',
      [image(), image(), image()],
      'messages[0].content',
    ],
    ['a part of another type', [{ type: 'audio', data: 'x' }], 'messages[0].content[0]'],
  ])('400 for %s', async (_name, content, path) => {
    const id = await agentWith('gpt-4o-mini');
    const res = await api(t, 'POST', `/v1/agents/${id}/messages`, ask(content));
    expect(res.status).toBe(400);
    expect(res.body.details.problems.map((p: any) => p.path)).toEqual([path]);
    expect(fake.requests).toHaveLength(0);
  });
});
