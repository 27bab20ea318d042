import type { ArchiveEntity, PassageEntity } from './archival.entities';
import type { ScoredPassage } from './archival.repository';

const iso = (ms: number) => new Date(ms).toISOString();

/** A passage in Letta's shape: its vector and its archive's embedding model, when it has one. */
export function toPassageResponse(p: PassageEntity): Record<string, unknown> {
  return {
    id: p.id,
    text: p.text,
    archive_id: p.archive_id,
    tags: p.tags,
    metadata: p.metadata ?? {},
    embedding: p.embedding ?? null,
    embedding_config: p.embedding_config ?? null,
    // no files or users here (Letta's folder passages, org members)
    file_id: null,
    file_name: null,
    source_id: null,
    is_deleted: false,
    created_by_id: null,
    last_updated_by_id: null,
    created_at: iso(p.created_at),
    updated_at: iso(p.updated_at),
  };
}

export function toArchiveResponse(a: ArchiveEntity): Record<string, unknown> {
  return {
    id: a.id,
    name: a.name,
    description: a.description,
    metadata: a.metadata ?? {},
    vector_db_provider: 'native',
    embedding_config: a.embedding_config ?? null,
    created_by_id: null,
    last_updated_by_id: null,
    created_at: iso(a.created_at),
    updated_at: iso(a.updated_at),
  };
}

/** One result of the agent route's search and of `archival_memory_search` (Letta's formatting). */
export function toArchivalResult(s: ScoredPassage): {
  id: string;
  timestamp: string;
  content: string;
  tags: string[];
} {
  return {
    id: s.passage.id,
    timestamp: iso(s.passage.created_at),
    content: s.passage.text,
    tags: s.passage.tags,
  };
}

/** One result of `POST /v1/passages/search`. */
export function toPassageSearchResult(s: ScoredPassage): Record<string, unknown> {
  return { passage: toPassageResponse(s.passage), score: s.score, metadata: {} };
}
