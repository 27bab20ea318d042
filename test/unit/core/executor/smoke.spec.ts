import { aSetup, Harness } from './executor-harness';

test('smoke', async () => {
  const h = new Harness(
    aSetup([{ type: 'requires_preceding_tools', tool_name: 'b', tools: ['a'] }]),
  );
  expect(await h.run(['b', 'a', 'b'])).toBe('RuleViolation ok ok');
  const o = await h.call('zzz');
  expect(o.returnValue).toBe('[ToolNotFound] no tool named zzz; available: a, b, c, d, e');
  h.heartbeat();
  const r = await h.call('b');
  expect(r.returnValue).toBe(
    '[ToolRuleViolation] b requires a earlier in this pass; allowed now: a, c, d, e',
  );
});
