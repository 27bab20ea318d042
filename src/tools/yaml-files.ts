import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';

/** The `*.yaml` / `*.yml` files of a folder, sorted; none when the folder does not exist. */
export function yamlFilesIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => /\.ya?ml$/i.test(f))
    .sort()
    .map((f) => path.join(dir, f));
}

/** Parses one YAML file; a syntax error becomes `<kind> file <path>: (yaml): <first line of the reason>`. */
export function readYamlFile(file: string, kind: 'agent' | 'tool' | 'mcp'): unknown {
  try {
    return parseYaml(readFileSync(file, 'utf8')) as unknown;
  } catch (e) {
    throw new Error(`${kind} file ${file}: (yaml): ${(e as Error).message.split('\n')[0]}`);
  }
}
