/**
 * The bytes a tenant stores (`quotas.stored_bytes`, docs/security.md "Stored bytes"): the content columns of
 * the tables where a tenant's data grows, measured as the database holds them (UTF-8 text; a JSON column
 * as its JSON text, `simple-json`; NULL as nothing). The database counts them (migration StoredBytes, from
 * the same lists); the app measures a write it is about to check with `storedBytes`, to the same byte.
 */

interface CountedColumn {
  name: string;
  json: boolean;
}

const text = (name: string): CountedColumn => ({ name, json: false });
const json = (name: string): CountedColumn => ({ name, json: true });

/**
 * Per table, the columns whose bytes count (column names as stored; each is its entity's property).
 * Messages carry the turns and tool returns; a run keeps its request (the user's messages as sent); the
 * rest are what the tenant writes over the API or its agents' memory tools.
 */
export const STORED_BYTES_COLUMNS = {
  messages: [json('payload')],
  runs: [json('input')],
  passages: [text('text'), json('tags'), json('metadata')],
  blocks: [text('label'), text('value'), text('description'), json('metadata'), json('tags')],
  agents: [
    text('system'),
    text('description'),
    json('tools'),
    json('tool_rules'),
    json('llm_config'),
    json('tags'),
    json('metadata'),
    json('tool_executor'),
    json('model_script'),
    json('budgets'),
    json('client_tools'),
    json('embedding_config'),
  ],
} satisfies Record<string, CountedColumn[]>;

export type StoredBytesTable = keyof typeof STORED_BYTES_COLUMNS;

/** A row's counted bytes, as the database will hold it (`row`: the entity's properties). */
export function storedBytes(table: StoredBytesTable, row: object): number {
  const values = row as Record<string, unknown>;
  let n = 0;
  for (const c of STORED_BYTES_COLUMNS[table]) {
    const v = values[c.name];
    if (v === null || v === undefined) continue;
    n += Buffer.byteLength(c.json ? JSON.stringify(v) : (v as string), 'utf8');
  }
  return n;
}
