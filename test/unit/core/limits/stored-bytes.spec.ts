import { storedBytes } from '../../../../src/core/limits/stored-bytes';

/** The app measures a row as the database's triggers do: UTF-8 bytes of its counted text and JSON columns. */
describe('storedBytes', () => {
  it.each<[string, Parameters<typeof storedBytes>[0], object, number]>([
    ['a message: its payload as JSON text', 'messages', { payload: { content: 'hi' } }, 16],
    ['UTF-8, not characters', 'messages', { payload: { content: 'é€😀' } }, 23],
    ['a run: its input only', 'runs', { id: 'run-1', input: { messages: [] } }, 15],
    [
      'a block: label, value, description, metadata and tags; NULL is nothing',
      'blocks',
      { label: 'ab', value: 'cde', description: null, metadata: null, tags: ['x'], limit: 5 },
      10,
    ],
    ['a passage: text, tags, metadata', 'passages', { text: 'abc', tags: [], metadata: {} }, 7],
    [
      'an agent: its text and JSON columns, not its name',
      'agents',
      { name: 'n', system: 'sys' },
      3,
    ],
  ])('%s', (_case, table, row, bytes) => {
    expect(storedBytes(table, row)).toBe(bytes);
  });
});
