import { Column, ColumnOptions, ValueTransformer } from 'typeorm';

/**
 * Column shapes that behave the same on SQLite and PostgreSQL.
 * Times are epoch milliseconds in a bigint (PostgreSQL hands bigints back as strings, hence the transformer);
 * JSON is text (`simple-json`), so no driver-specific json type is needed.
 */
const epochMs: ValueTransformer = {
  to: (v: number | null | undefined) => v,
  from: (v: string | number | null) => (v === null || v === undefined ? null : Number(v)),
};

export const EpochMsColumn = (opts: Pick<ColumnOptions, 'nullable' | 'name'> = {}) =>
  Column({ type: 'bigint', transformer: epochMs, ...opts });

export const JsonColumn = (opts: Pick<ColumnOptions, 'nullable' | 'name'> = {}) =>
  Column({ type: 'simple-json', ...opts });

/** Integer stored as bigint with the same transformer (sequence numbers). */
export const BigIntColumn = (opts: Pick<ColumnOptions, 'nullable' | 'name' | 'default'> = {}) =>
  Column({ type: 'bigint', transformer: epochMs, ...opts });
