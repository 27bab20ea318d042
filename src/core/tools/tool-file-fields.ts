import { unknownKeyMessage } from '../did-you-mean';
import type { ValidationProblem } from '../rules/validate-tool-rules';

/**
 * The keys a tool file (config/tools/*.yaml) may have: those `validateToolDeclaration` reads. A file is
 * written by hand, so a key we do not know is a typo (`saftey:`) and stops the boot, as agent files do.
 */
const TOOL_FIELDS = [
  'name',
  'description',
  'parameters',
  'safety',
  'kind',
  'http',
  'tags',
  'return_char_limit',
  'default_requires_approval',
];
const HTTP_FIELDS = ['url', 'method', 'headers', 'timeout_ms'];

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const unknown = (o: Record<string, unknown>, known: string[], at: (k: string) => string) =>
  Object.keys(o)
    .filter((k) => !known.includes(k))
    .map((k) => ({ path: at(k), message: unknownKeyMessage(k, known) }));

/** One problem per key of a file's document (one tool, or `{tools: [...]}`) that a tool file may not have. */
export function unknownToolFileFields(doc: unknown): ValidationProblem[] {
  if (!isObj(doc)) return [];
  if (!('tools' in doc)) return toolProblems(doc, '');
  const list = doc.tools;
  return [
    ...unknown(doc, ['tools'], (k) => k),
    ...(Array.isArray(list) ? list.flatMap((t, i) => toolProblems(t, `tools[${i}]`)) : []),
  ];
}

function toolProblems(tool: unknown, base: string): ValidationProblem[] {
  if (!isObj(tool)) return [];
  const at = (k: string) => (base ? `${base}.${k}` : k);
  return [
    ...unknown(tool, TOOL_FIELDS, at),
    ...(isObj(tool.http) ? unknown(tool.http, HTTP_FIELDS, (k) => at(`http.${k}`)) : []),
  ];
}
