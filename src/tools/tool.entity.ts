import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn, JsonColumn } from '../database/columns';
import type { HttpToolSpec, McpToolRef, ToolKind, ToolSafety } from '../core/tools/tool-definition';

/** A declared tool. Header values are stored with their `${ENV}` placeholders, never resolved. */
@Entity('tools')
@Index('idx_tools_tenant_name', ['tenant_id', 'name'], { unique: true })
export class ToolEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @Column({ type: 'varchar', length: 64 })
  name!: string;

  @Column({ type: 'text' })
  description!: string;

  @JsonColumn()
  parameters!: Record<string, unknown>;

  @Column({ type: 'varchar', length: 32 })
  safety!: ToolSafety;

  @Column({ type: 'varchar', length: 32 })
  kind!: ToolKind;

  @JsonColumn({ nullable: true })
  http!: HttpToolSpec | null;

  /** Set for kind mcp: the server and the tool's name there (the rows are kept in step by refresh). */
  @JsonColumn({ nullable: true })
  mcp!: McpToolRef | null;

  @Column({ type: 'varchar', length: 16 })
  source!: 'api' | 'file' | 'mcp';

  @JsonColumn({ nullable: true })
  tags!: string[] | null;

  @Column({ type: 'integer', nullable: true })
  return_char_limit!: number | null;

  /** Letta's: agents given the tool get a requires_approval rule for it (null: never set). */
  @Column({ type: 'boolean', nullable: true })
  default_requires_approval!: boolean | null;

  @EpochMsColumn()
  created_at!: number;

  @EpochMsColumn()
  updated_at!: number;
}
