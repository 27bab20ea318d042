import { randomAgentName } from '../../../../src/core/agents/random-agent-name';

describe("randomAgentName: Letta's create_random_username", () => {
  it.each([
    ['the first words', () => 0, 'BeautifulLizard'],
    ['the last words', (n: number) => n - 1, 'YareTulip'],
  ])('%s', (_, pick, name) => {
    expect(randomAgentName(pick)).toBe(name);
  });

  it('draws each word from its whole list', () => {
    const asked: number[] = [];
    randomAgentName((n) => {
      asked.push(n);
      return 0;
    });
    // Letta's lists, each word once
    expect(asked).toEqual([180, 184]);
  });
});
