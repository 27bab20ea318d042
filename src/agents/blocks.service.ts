import { Inject, Injectable } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import { badRequest, conflict, notFound, validationFailed } from '../common/domain-error';
import { assertPrefixedId, ID_GENERATOR, isPrefixedId } from '../common/ids';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import type { MemoryBlock } from '../core/agents/agent-record';
import { nulBytePaths } from '../core/agents/nul-bytes';
import { readLimit } from '../core/limits';
import { applyBlockPatch, parseNewBlock } from '../core/agents/validate-block';
import type { Clock, IdGenerator } from '../core/ports';
import type { ValidationProblem } from '../core/rules/validate-tool-rules';
import { BlockEntity } from './block.entity';
import { BlockListQuery, BlocksRepository, toMemoryBlock } from './blocks.repository';

const SEARCH_MAX = 200;
const one = (v: unknown): unknown => (Array.isArray(v) ? v[v.length - 1] : v);

/**
 * Letta's standalone memory blocks (`/v1/blocks/`): one block may be attached to several agents, and an
 * edit through any of them, the block route or a memory tool is what every one of them sees next.
 */
@Injectable()
export class BlocksService {
  constructor(
    private readonly blocks: BlocksRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
  ) {}

  async create(tenantId: string, body: unknown): Promise<MemoryBlock> {
    const problems: ValidationProblem[] = nulBytePaths(body);
    const fields = parseNewBlock(body, '', this.config.limits, (path, message, limit) =>
      problems.push({ path, message, ...(limit ? { limit } : {}) }),
    );
    if (!fields || problems.length) throw validationFailed(problems, 'block is invalid');
    const now = this.clock.now();
    const row = Object.assign(new BlockEntity(), fields, {
      id: this.ids.prefixed('block'),
      tenant_id: tenantId,
      created_at: now,
      updated_at: now,
    });
    await this.blocks.insert(row);
    return toMemoryBlock(row);
  }

  async get(tenantId: string, id: string): Promise<MemoryBlock> {
    return toMemoryBlock(await this.load(tenantId, id));
  }

  async list(tenantId: string, raw: Record<string, unknown>): Promise<MemoryBlock[]> {
    const problems: ValidationProblem[] = nulBytePaths(raw);
    const q: BlockListQuery = {
      label: null,
      labelSearch: null,
      valueSearch: null,
      descriptionSearch: null,
      tags: [],
      matchAllTags: false,
      showHidden: false,
      limit: 50,
      maxBytes: this.config.limits.max_page_bytes,
      order: 'asc', // Letta's list_blocks: oldest first unless asked otherwise
    };
    const flag = (key: string): boolean => {
      const v = one(raw[key]);
      if (v === true || v === 'true') return true;
      if (v !== undefined && v !== false && v !== 'false')
        problems.push({ path: key, message: 'must be true or false' });
      return false;
    };
    const text = (key: string): string | null => {
      const v = one(raw[key]);
      if (v === undefined || v === '') return null;
      if (typeof v === 'string' && v.length <= SEARCH_MAX) return v;
      problems.push({ path: key, message: `must be a text of at most ${SEARCH_MAX} characters` });
      return null;
    };
    q.label = text('label');
    q.labelSearch = text('label_search');
    q.valueSearch = text('value_search');
    q.descriptionSearch = text('description_search');
    const tags = raw.tags === undefined ? [] : Array.isArray(raw.tags) ? raw.tags : [raw.tags];
    const maxTags = this.config.limits.max_tags_per_agent;
    if (tags.length > maxTags || tags.some((t) => typeof t !== 'string' || t.length > SEARCH_MAX))
      problems.push({
        path: 'tags',
        message: `must be at most ${maxTags} tags (limits.max_tags_per_agent) of at most ${SEARCH_MAX} characters`,
      });
    else q.tags = [...new Set(tags as string[])].filter((t) => t !== '');
    q.matchAllTags = flag('match_all_tags');
    q.showHidden = flag('show_hidden_blocks');
    q.limit = readLimit(raw.limit, q.limit, 'max_page_size', this.config.limits, problems);
    const order = one(raw.order);
    if (order === 'asc' || order === 'desc') q.order = order;
    else if (order !== undefined)
      problems.push({ path: 'order', message: 'must be "asc" or "desc"' });
    const after = text('after');
    const before = text('before');
    if (problems.length) throw validationFailed(problems, 'query is invalid');
    const cursor = async (id: string | null) => {
      if (id === null) return null;
      const found = isPrefixedId('block', id) ? await this.blocks.find(tenantId, id) : null;
      if (!found)
        throw badRequest('UNKNOWN_CURSOR', `cursor ${JSON.stringify(id)} is not a block id`);
      return found;
    };
    const rows = await this.blocks.list(
      tenantId,
      q,
      { after: await cursor(after), before: await cursor(before) },
      { rows: this.config.limits.search_scan_rows, chars: this.config.limits.search_scan_chars },
    );
    return rows.map(toMemoryBlock);
  }

  /** An owner's edit (Letta's BlockUpdate); a new label must be free in every agent that has the block. */
  async update(tenantId: string, id: string, body: unknown): Promise<MemoryBlock> {
    const nul = nulBytePaths(body);
    if (nul.length) throw validationFailed(nul, 'block is invalid');
    const current = await this.load(tenantId, id);
    const { block, problems } = applyBlockPatch(toMemoryBlock(current), body, this.config.limits);
    if (!block) throw validationFailed(problems, 'block is invalid');
    if (block.label !== current.label) await this.assertLabelFree(tenantId, id, block.label);
    return this.write(tenantId, id, () => block);
  }

  /**
   * An agent's edit of the block's value (the core memory tools): read_only and the limit bind it.
   * `edit` may throw (the tool's error).
   */
  async editValue(
    tenantId: string,
    id: string,
    edit: (current: string) => string,
  ): Promise<MemoryBlock> {
    return this.write(tenantId, id, (b) => {
      if (b.read_only)
        throw badRequest('BLOCK_READ_ONLY', `memory block "${b.label}" is read-only`, {
          label: b.label,
        });
      const value = edit(b.value);
      if (value.length > b.limit)
        throw badRequest(
          'BLOCK_LIMIT_EXCEEDED',
          `Edit failed: exceeds the ${b.limit} character limit of block "${b.label}" (requested ${value.length})`,
          { label: b.label, limit: b.limit, length: value.length },
        );
      return { ...toMemoryBlock(b), value };
    });
  }

  async remove(tenantId: string, id: string): Promise<void> {
    assertPrefixedId('block', 'block', id);
    if (!(await this.blocks.remove(tenantId, id))) throw notFound('block', id);
  }

  /** Ids of the agents the block is attached to (Letta's `blocks.agents.list`). */
  async agentIds(tenantId: string, id: string): Promise<string[]> {
    await this.load(tenantId, id);
    return this.blocks.agentsOfBlock(tenantId, id);
  }

  /** The tenant's block (404 for a malformed id or another tenant's block). */
  async load(tenantId: string, id: string): Promise<BlockEntity> {
    assertPrefixedId('block', 'block', id);
    const row = await this.blocks.find(tenantId, id);
    if (!row) throw notFound('block', id);
    return row;
  }

  private async write(
    tenantId: string,
    id: string,
    change: (current: BlockEntity) => MemoryBlock,
  ): Promise<MemoryBlock> {
    const now = this.clock.now();
    const done = await this.blocks.modify(tenantId, id, (b) => ({
      ...change(b),
      updated_at: now,
    }));
    if (!done) throw notFound('block', id);
    return toMemoryBlock(done);
  }

  private async assertLabelFree(tenantId: string, id: string, label: string): Promise<void> {
    const agents = await this.blocks.agentsOfBlock(tenantId, id);
    for (const [agentId, blocks] of await this.blocks.blocksOfAgents(agents))
      if (blocks.some((b) => b.id !== id && b.label === label))
        throw conflict(
          'BLOCK_LABEL_TAKEN',
          `agent ${agentId} already has a block labelled "${label}"`,
          {
            agent_id: agentId,
            label,
          },
        );
  }
}
