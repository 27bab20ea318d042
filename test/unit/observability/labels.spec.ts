import {
  BoundedLabel,
  OTHER_LABEL,
  toolLabel,
  UNKNOWN_TOOL,
} from '../../../src/observability/labels';

/** observability.labels.max_chars of these tests. */
const CHARS = 128;

describe('metric labels a model or a tenant chooses', () => {
  it('a tool the agent does not have is <unknown>; a known one keeps its name, cut to max_chars', () => {
    expect(toolLabel({ tool: 'x'.repeat(100_000), error_type: 'NotFound' }, CHARS)).toBe(
      UNKNOWN_TOOL,
    );
    expect(toolLabel({ tool: 'lookup', error_type: null }, CHARS)).toBe('lookup');
    expect(toolLabel({ tool: 'y'.repeat(500), error_type: 'ToolError' }, CHARS)).toBe(
      'y'.repeat(CHARS),
    );
  });

  it('a label keeps its first distinct values; later new ones are <other>, known ones stay', () => {
    const label = new BoundedLabel(3, CHARS);
    expect(['a', 'b', 'a', 'c'].map((v) => label.of(v))).toEqual(['a', 'b', 'a', 'c']);
    expect(label.of('d')).toBe(OTHER_LABEL);
    expect(label.of('b')).toBe('b');
    expect(label.of('z'.repeat(1000))).toBe(OTHER_LABEL);
  });

  it('values are cut before they are counted (two long names sharing a prefix are one value)', () => {
    const label = new BoundedLabel(2, CHARS);
    const long = (tail: string) => 'p'.repeat(CHARS) + tail;
    expect(label.of(long('1'))).toBe('p'.repeat(CHARS));
    expect(label.of(long('2'))).toBe('p'.repeat(CHARS));
    expect(label.of('other')).toBe('other');
  });
});
