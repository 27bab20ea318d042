import {
  parseContent,
  toChatContent,
  withoutImages,
} from '../../../../src/core/loop/content-parts';
import type { ValidationProblem } from '../../../../src/core/rules/validate-tool-rules';

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const LIMITS = { maxImages: 2, maxImageBytes: 100 };
const img = (source: Record<string, unknown>) => ({ type: 'image', source });

function parse(content: unknown) {
  const problems: ValidationProblem[] = [];
  return { content: parseContent(content, 'c', LIMITS, problems), problems };
}

describe('parseContent', () => {
  it('text stays text; text parts are joined; images keep the parts', () => {
    expect(parse('hi').content).toBe('hi');
    expect(
      parse([
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ]).content,
    ).toBe('ab');
    const parts = [
      { type: 'text', text: 'see' },
      img({ type: 'base64', media_type: 'image/png', data: PNG, detail: 'low' }),
    ];
    expect(parse(parts).content).toEqual(parts);
  });

  it.each([
    ['a URL', img({ type: 'url', url: 'https://example.com/x.png' }), 'c[0].source.type'],
    ['a stored Letta file', img({ type: 'letta', file_id: 'f' }), 'c[0].source.type'],
    ['svg', img({ media_type: 'image/svg+xml', data: PNG }), 'c[0].source.media_type'],
    ['png bytes called jpeg', img({ media_type: 'image/jpeg', data: PNG }), 'c[0].source.data'],
    ['bad base64', img({ media_type: 'image/png', data: 'a b=' }), 'c[0].source.data'],
    [
      'a bad detail',
      img({ media_type: 'image/png', data: PNG, detail: 'max' }),
      'c[0].source.detail',
    ],
    [
      'too many bytes',
      img({ media_type: 'image/png', data: Buffer.alloc(120, 0x89).toString('base64') }),
      'c[0].source.data',
    ],
  ])('refuses %s', (_n, part, path) => {
    const { content, problems } = parse([part]);
    expect(content).toBeNull();
    expect(problems.map((p) => p.path)).toEqual([path]);
  });

  it('counts images against maxImages', () => {
    const one = img({ media_type: 'image/png', data: PNG });
    expect(parse([one, one, one]).problems).toEqual([
      expect.objectContaining({ path: 'c', limit: 'processing.max_images_per_message' }),
    ]);
  });
});

describe('images for the model', () => {
  const stored = [
    { type: 'text', text: 'see ' },
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
  ];
  it('a vision model gets a data URL; another one a note', () => {
    const chat = toChatContent(stored);
    expect(chat).toEqual([
      { type: 'text', text: 'see ' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
    ]);
    expect(withoutImages([{ role: 'user', content: chat }])).toEqual([
      { role: 'user', content: "see [image omitted: this agent's model does not accept images]" },
    ]);
  });
});
