import type { ValidationProblem } from '../rules/validate-tool-rules';

/** Letta's agent relationships (`include=agent.tools` …): what an agent answer loads beyond its own fields. */
export const AGENT_RELATIONS = [
  'blocks',
  'identities',
  'managed_group',
  'pending_approval',
  'secrets',
  'sources',
  'tags',
  'tools',
] as const;
export type AgentRelation = (typeof AGENT_RELATIONS)[number];

/** Letta's deprecated `include_relationships` names, as its server maps them. */
const LEGACY: Record<string, AgentRelation[]> = {
  tools: ['tools'],
  sources: ['sources'],
  memory: ['blocks'],
  tags: ['tags'],
  identity_ids: ['identities'],
  identities: ['identities'],
  multi_agent_group: ['managed_group'],
  tool_exec_environment_variables: ['secrets'],
  secrets: ['secrets'],
};

const values = (v: unknown): unknown[] =>
  (v === undefined ? [] : Array.isArray(v) ? (v as unknown[]) : [v]).flatMap((x): unknown[] =>
    typeof x === 'string' ? x.split(',').filter((s) => s !== '') : [x],
  );

/**
 * The relations an agent answer carries: every one when the query names none (as Letta answers clients
 * that do not ask), else exactly those of `include` (`agent.<relation>`) and the legacy
 * `include_relationships`. A relation left out is answered empty, never missing: `tools: []`,
 * `memory: {blocks: []}`, `pending_approval: null`. An unknown `include` value is a problem (Letta: 422).
 */
export function parseAgentInclude(q: Record<string, unknown>): {
  include: ReadonlySet<AgentRelation>;
  problems: ValidationProblem[];
} {
  const problems: ValidationProblem[] = [];
  const asked = [...values(q.include), ...values(q['include[]'])];
  const legacy = values(q.include_relationships);
  if (asked.length === 0 && q.include_relationships === undefined)
    return { include: new Set(AGENT_RELATIONS), problems };
  const out = new Set<AgentRelation>();
  for (const v of asked.slice(0, AGENT_RELATIONS.length * 4)) {
    const name = typeof v === 'string' && v.startsWith('agent.') ? v.slice(6) : null;
    if (name !== null && (AGENT_RELATIONS as readonly string[]).includes(name))
      out.add(name as AgentRelation);
    else
      problems.push({
        path: 'include',
        message: `${JSON.stringify(String(v).slice(0, 100))} is not one of ${AGENT_RELATIONS.map((r) => `agent.${r}`).join(', ')}`,
      });
  }
  // Letta ignores legacy names it does not know
  for (const v of legacy)
    if (typeof v === 'string')
      for (const r of Object.hasOwn(LEGACY, v) ? LEGACY[v] : []) out.add(r);
  return { include: out, problems };
}
