/** A table name for raw SQL, qualified with the configured PostgreSQL schema (entities are, by TypeORM). */
export function sqlTable(schema: string | null | undefined, table: string): string {
  return schema ? `"${schema.replace(/"/g, '""')}"."${table}"` : `"${table}"`;
}
