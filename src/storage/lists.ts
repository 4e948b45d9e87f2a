import type { ListFilter } from '../domain/list-query.ts';
import type { ChangeRow } from '../domain/feed-item.ts';
import type { RecordOut } from '../schemas/record.ts';
import { writeIdTime } from '../core/ledger.ts';
import type { Meter } from './meter.ts';
import { retrying } from './retry.ts';
import { MAX_TUPLE_CHARS, packTuples } from './writes.ts';
import type { Caller } from '../domain/access.ts';
import type { RecordKeys } from '../domain/record-keys.ts';
import type { ObjectDef } from '../domain/definition.ts';
import {
  MEMBER_READS,
  MEMBER_HIDES,
  MEMBER_RULES,
  callerOf,
  callersOf,
  callerStatement,
  callersStatement,
  MAX_PAGE_BYTES,
  OBJECTS_IN_VIEW,
  recordsOf,
  sizedPage,
  toObjectDef,
  type ObjectRow,
  type RecordReadRow,
} from './store.ts';
import type { D1 } from './sessions.ts';
import { idRange, TENANT_BLOCK } from '../domain/tenant.ts';

/** How long the change feed keeps a change unless configured longer: 7 days. */
export const FEED_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * One page of a workspace's records in id order. A field filter compares each listed field's
 * value, as its JSON text (or the string itself for text), by reading the JSON of every record
 * the other conditions let through: its cost grows with the workspace (or object), not the page.
 * A list of one object's records walks the workspace's key of that object (`o` in `record_sort`):
 * beside many records of other objects, it reads what the object holds.
 */
// Only the records the caller's role there lets them read (key hash `?8`); a filter on a field their
// role hides holds for no record, as one on a field the object does not have.
const LIST_CONDITIONS = `AND (?4 = 'include' OR r.deleted = (?4 = 'only'))
    AND (?5 IS NULL OR r.updated_at > ?5)
    AND ${MEMBER_READS('?8', '?1')}
    AND NOT EXISTS (SELECT 1 FROM json_each(?6) f WHERE ${MEMBER_HIDES('?8', '?1', "(f.value ->> '$.name')")}
      OR NOT EXISTS (SELECT 1 FROM json_each(r.field_values) v
      WHERE v.value ->> '$.fieldName' = f.value ->> '$.name'
        AND (CASE json_type(v.value, '$.value') WHEN 'text' THEN v.value ->> '$.value'
          ELSE v.value -> '$.value' END) = f.value ->> '$.value'))`;
const LIST = sizedPage(
  `FROM record_workspaces rw JOIN records r ON r.id = rw.record_id
  WHERE rw.workspace_id = ?1 AND rw.record_id > ?2
    ${LIST_CONDITIONS}
  ORDER BY rw.record_id`,
  [],
  '?7',
);
const LIST_OF_OBJECT = sizedPage(
  `FROM record_sort rw JOIN records r ON r.id = rw.record_id
  WHERE rw.workspace_id = ?1 AND rw.key = 'o' AND rw.value = ?3 AND rw.record_id > ?2
    ${LIST_CONDITIONS}
  ORDER BY rw.record_id`,
  [],
  '?7',
);

// The changes' sizes first (`octet_length` reads no value): only those that start within a
// page's bytes are read whole, so a page of large created records reads what it can answer.
// Under a defined role (key hash `?4`), only changes of records it lets the caller read, each with its
// record's object (which fields it hides depends on it); neither is read for a built-in role.
const FEED = `SELECT c.seq, c.record_id, c.version, c.type, c.at, c.by, c.data,
    CASE WHEN ${MEMBER_RULES('?4', '?1')} IS NOT NULL
      THEN (SELECT object_id FROM records WHERE id = c.record_id) END AS object_id FROM (
    SELECT p.*, coalesce(sum(p.size) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before FROM (
      SELECT c.seq, octet_length(c.data) AS size FROM changes c
      WHERE c.seq > ?2 AND EXISTS (SELECT 1 FROM record_workspaces rw
        WHERE rw.workspace_id = ?1 AND rw.record_id = c.record_id)
        AND (${MEMBER_RULES('?4', '?1')} IS NULL
          OR EXISTS (SELECT 1 FROM records r WHERE r.id = c.record_id AND ${MEMBER_READS('?4', '?1')}))
      ORDER BY c.seq LIMIT ?3) p) m
  CROSS JOIN changes c ON c.seq = m.seq
  WHERE m.before <= ${MAX_PAGE_BYTES}`;
// Every change of the workspace (`?1`) after `?2`, at most `?3` and as many as start within a page's
// bytes, with its record's object and owner now; `listed`: how many the count alone allowed.
const LIVE_FEED = `SELECT c.seq, c.record_id, c.version, c.type, c.at, c.by, c.data, r.object_id, r.owned_by,
    m.listed FROM (
    SELECT p.*, coalesce(sum(p.size) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before,
      count(*) OVER () AS listed FROM (
      SELECT c.seq, octet_length(c.data) AS size FROM changes c
      WHERE c.seq > ?2 AND EXISTS (SELECT 1 FROM record_workspaces rw
        WHERE rw.workspace_id = ?1 AND rw.record_id = c.record_id)
      ORDER BY c.seq LIMIT ?3) p) m
  CROSS JOIN changes c ON c.seq = m.seq
  LEFT JOIN records r ON r.id = c.record_id
  WHERE m.before <= ${MAX_PAGE_BYTES}
  ORDER BY c.seq`;
// How far the feed of the workspace's (`?1`) tenant was pruned.
const HORIZON = `SELECT coalesce((SELECT seq FROM feed_horizons
  WHERE tenant = CAST(?1 AS INTEGER) / ${TENANT_BLOCK} + 1), 0) AS seq`;

// The newest change number of the workspace's (`?1`) tenant: the tenant's changes are numbered in its block.
const NEWEST = `SELECT coalesce(max(seq), 0) AS seq FROM changes
  WHERE seq >= CAST(?1 AS INTEGER) / ${TENANT_BLOCK} * ${TENANT_BLOCK}
    AND seq < (CAST(?1 AS INTEGER) / ${TENANT_BLOCK} + 1) * ${TENANT_BLOCK}`;

// The current definitions of the objects shared with workspace ?1, by id after ?2.
const WORKSPACE_OBJECTS = `SELECT v.object_id AS id, v.version, v.name, v.name_template, v.fields, v.workspace_ids
  FROM objects o JOIN object_versions v ON v.object_id = o.id AND v.version = o.current_version
  WHERE o.id > ?2 AND EXISTS (SELECT 1 FROM json_each(v.workspace_ids) j WHERE j.value = ?1)
  ORDER BY o.id LIMIT ?3`;

/** A change as the feed reads it (see domain/feed-item.ts). */
export type Change = ChangeRow;

/** A change as a live stream reads it: with its record's owner now (its object too). */
export interface LiveChange extends ChangeRow {
  ownedBy: number | null;
}

/** A change as the feed's statements answer it. */
interface FeedRow {
  seq: number;
  record_id: number;
  version: number;
  type: Change['type'];
  at: number;
  by: number;
  data: string;
  object_id: number | null;
}

/**
 * SQL of lists and the change feed. Each method is one D1 round trip unless it says otherwise.
 * A page is read together with the caller behind `keyHash` (one round trip for both); the
 * route decides from the caller whether the page may be shown at all.
 */
/** Records read a round trip when filling the keys of records written before them. */
const FILL_ROWS = 200;
/** Bytes of values a round of fillKeys reads at most, besides its first record. */
const FILL_BYTES = 8_000_000;

export class Lists {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
    /** The tenant a request was routed to: its callers are its users alone (upkeep: NO_TENANT). */
    private readonly tenant: number,
  ) {}

  /** Up to `limit` records of the workspace after id `afterId` that pass `filter`, and the caller. */
  async records(
    keyHash: string,
    workspaceId: number,
    filter: ListFilter,
    afterId: number,
    limit: number,
    withObjects = false,
  ): Promise<{ caller: Caller | undefined; records: RecordOut[]; sizeCut: boolean; objects: ObjectDef[] }> {
    const page = this.db
      .prepare(filter.objectId === undefined ? LIST : LIST_OF_OBJECT)
      .bind(
        workspaceId,
        afterId,
        filter.objectId ?? null,
        filter.deleted,
        filter.updatedAfter ?? null,
        JSON.stringify(filter.fields),
        limit,
        keyHash,
      );
    const [caller, rows, objects] = await this.read([
      callerStatement(this.db, keyHash, this.tenant),
      page,
      ...(withObjects ? [this.db.prepare(OBJECTS_IN_VIEW).bind(workspaceId)] : []),
    ]);
    const results = (rows?.results ?? []) as (RecordReadRow & { size_cut: number })[];
    // The records' size ended the page: more may follow.
    return {
      caller: callerOf(caller),
      records: recordsOf(results),
      sizeCut: results.at(-1)?.size_cut === 1,
      objects: ((objects?.results ?? []) as ObjectRow[]).map(toObjectDef),
    };
  }

  /** Up to `limit` changes of the workspace's records after `afterSeq`, the prune horizon, and the caller. */
  async changes(
    keyHash: string,
    workspaceId: number,
    afterSeq: number,
    limit: number,
  ): Promise<{ caller: Caller | undefined; changes: Change[]; horizon: number }> {
    const [caller, rows, horizon] = await this.read([
      callerStatement(this.db, keyHash, this.tenant),
      this.db.prepare(FEED).bind(workspaceId, afterSeq, limit, keyHash),
      this.db.prepare(HORIZON).bind(workspaceId),
    ]);
    const changes = ((rows?.results ?? []) as FeedRow[]).map(({ record_id, object_id, ...row }) => ({
      ...row,
      recordId: record_id,
      ...(object_id === null ? {} : { objectId: object_id }),
    }));
    return {
      caller: callerOf(caller),
      changes,
      horizon: (horizon?.results[0] as { seq: number } | undefined)?.seq ?? 0,
    };
  }

  /** Up to `limit` current definitions of the workspace's objects, by id after `afterId`, and the caller. */
  async objects(
    keyHash: string,
    workspaceId: number,
    afterId: number,
    limit: number,
  ): Promise<{ caller: Caller | undefined; objects: ObjectDef[] }> {
    const [caller, rows] = await this.read([
      callerStatement(this.db, keyHash, this.tenant),
      this.db.prepare(WORKSPACE_OBJECTS).bind(workspaceId, afterId, limit),
    ]);
    return { caller: callerOf(caller), objects: ((rows?.results ?? []) as ObjectRow[]).map(toObjectDef) };
  }

  /**
   * What a workspace's live streams need at once, in one transaction: the callers of their keys now,
   * and up to `limit` changes of the workspace after `afterSeq` with each record's object and owner
   * (who may see a change is decided from them, as the feed decides it in SQL); `more` when others follow.
   */
  async live(
    keyHashes: readonly string[],
    workspaceId: number,
    afterSeq: number,
    limit: number,
  ): Promise<{ callers: Map<string, Caller>; changes: LiveChange[]; more: boolean }> {
    const [callers, rows] = await this.read([
      callersStatement(this.db, keyHashes, this.tenant),
      this.db.prepare(LIVE_FEED).bind(workspaceId, afterSeq, limit),
    ]);
    const read = (rows?.results ?? []) as (FeedRow & { owned_by: number | null; listed: number })[];
    const changes = read.map(({ record_id, object_id, owned_by, listed: _, ...row }) => ({
      ...row,
      recordId: record_id,
      ...(object_id === null ? {} : { objectId: object_id }),
      ownedBy: owned_by,
    }));
    const listed = read[0]?.listed ?? 0;
    return { callers: callersOf(callers), changes, more: listed === limit || changes.length < listed };
  }

  /**
   * Where the workspace's feed stands now: its tenant's newest change number (no change of the
   * workspace after it is committed yet), at least the prune horizon; the horizon; and the caller.
   */
  async feedEnd(
    keyHash: string,
    workspaceId: number,
  ): Promise<{ caller: Caller | undefined; seq: number; horizon: number }> {
    const [caller, newest, horizon] = await this.read([
      callerStatement(this.db, keyHash, this.tenant),
      this.db.prepare(NEWEST).bind(workspaceId),
      this.db.prepare(HORIZON).bind(workspaceId),
    ]);
    const seqOf = (result: D1Result<unknown> | undefined) => (result?.results[0] as { seq: number } | undefined)?.seq;
    const pruned = seqOf(horizon) ?? 0;
    return { caller: callerOf(caller), seq: Math.max(seqOf(newest) ?? 0, pruned), horizon: pruned };
  }

  private read(statements: D1PreparedStatement[]): Promise<D1Result<unknown>[]> {
    return retrying(() => this.meter.d1(() => this.db.batch<unknown>(statements)));
  }

  /**
   * Removes changes older than `retentionMs` (at least FEED_RETENTION_MS), oldest first, tenant
   * by tenant (each tenant's numbers lie in its block), at most 1,000 a statement and `rounds`
   * statements a run (the next run goes on), never past the first one younger (so nothing younger
   * goes, even if clocks put an older time after it). Each round moves the tenant's horizon with
   * what it removes, in one transaction. Returns how many went.
   */
  async pruneChanges(now: number, retentionMs = FEED_RETENTION_MS, rounds = 50): Promise<number> {
    const tenants = await retrying(() =>
      this.meter.d1(() =>
        this.db
          .prepare("SELECT tenant FROM sequences WHERE name = 'objects' ORDER BY tenant")
          .all<{ tenant: number }>(),
      ),
    );
    let removed = 0;
    for (const { tenant } of tenants.results) {
      if (removed >= rounds * 1000) break;
      removed += await this.pruneTenant(tenant, now - Math.max(retentionMs, FEED_RETENTION_MS), rounds);
    }
    return removed;
  }

  private async pruneTenant(tenant: number, cutoff: number, rounds: number): Promise<number> {
    const { lo, hi } = idRange(tenant);
    const block = 'FROM changes WHERE seq >= ?2 AND seq < ?3';
    // The last of the tenant's next (at most) 1,000 changes such that none up to it is young, and
    // never its newest change, which keeps its numbers from coming back (the next is the highest + 1).
    const upTo = `(SELECT max(seq) FROM (SELECT seq, at ${block} ORDER BY seq LIMIT 1000) AS head
      WHERE seq < coalesce((SELECT min(seq) FROM (SELECT seq, at ${block} ORDER BY seq LIMIT 1000)
        WHERE at >= ?1), 9223372036854775807)
        AND seq < (SELECT max(seq) ${block}))`;
    let removed = 0;
    for (let round = 0; round < rounds; round++) {
      const [, deleted] = await retrying(() =>
        this.meter.d1(() =>
          this.db.batch([
            this.db
              .prepare(
                `INSERT INTO feed_horizons (tenant, seq) SELECT ?4, ${upTo} WHERE ${upTo} IS NOT NULL
                  ON CONFLICT (tenant) DO UPDATE SET seq = max(seq, excluded.seq)`,
              )
              .bind(cutoff, lo, hi, tenant),
            this.db
              .prepare(`DELETE FROM changes WHERE seq >= ?2 AND seq <= coalesce(${upTo}, -1)`)
              .bind(cutoff, lo, hi),
          ]),
        ),
      );
      const changes = deleted?.meta.changes ?? 0;
      removed += changes;
      if (changes < 1000) break;
    }
    return removed;
  }

  /**
   * Gives records written before their keys were kept (`folds` NULL) the keys `keysOf` computes
   * from their name and values: FILL_ROWS records a round trip, fewer when their values pass
   * FILL_BYTES (a record may hold 1 MiB), at most `rounds` round trips a run. The update's
   * triggers move their search terms. A record written meanwhile has its own keys and is left alone.
   */
  async fillKeys(
    keysOf: (name: string, fieldValues: { fieldName: string; value: unknown }[]) => RecordKeys,
    rounds = 100,
  ): Promise<number> {
    let filled = 0;
    for (let round = 0; round < rounds; round++) {
      const rows = await retrying(() =>
        this.meter.d1(() =>
          this.db
            .prepare(
              `SELECT id, name, field_values FROM (SELECT id, name, field_values,
                 coalesce(sum(octet_length(field_values))
                   OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
               FROM records WHERE folds IS NULL ORDER BY id LIMIT ${FILL_ROWS})
               WHERE before <= ${FILL_BYTES}`,
            )
            .all<{ id: number; name: string; field_values: string }>(),
        ),
      );
      const tuples = rows.results.map((row) => {
        const keys = keysOf(row.name, JSON.parse(row.field_values) as { fieldName: string; value: unknown }[]);
        return JSON.stringify([row.id, keys.nameKey, keys.terms, keys.folds]);
      });
      // Packed by size: D1 refuses a value over 2,000,000 bytes.
      const statements = packTuples(tuples, MAX_TUPLE_CHARS).map((packed) =>
        this.db
          .prepare(
            `UPDATE records SET name_key = j.value ->> 1, terms = j.value ->> 2, folds = j.value ->> 3
             FROM json_each(?1) j WHERE records.id = j.value ->> 0 AND records.folds IS NULL`,
          )
          .bind(typeof packed === 'string' ? packed : `[${tuples[packed] ?? ''}]`),
      );
      if (statements.length > 0) await retrying(() => this.meter.d1(() => this.db.batch(statements)));
      filled += tuples.length;
      if (tuples.length === 0) break;
    }
    return filled;
  }

  /** Removes ledger rows older than `ttlMs` (write ids start with their time), 1,000 a statement. */
  async pruneWrites(now: number, ttlMs: number, rounds = 50): Promise<number> {
    let removed = 0;
    for (let round = 0; round < rounds; round++) {
      const result = await retrying(() =>
        this.meter.d1(() =>
          this.db
            .prepare('DELETE FROM writes WHERE id IN (SELECT id FROM writes WHERE id < ?1 ORDER BY id LIMIT 1000)')
            .bind(writeIdTime(now - ttlMs))
            .run(),
        ),
      );
      removed += result.meta.changes;
      if (result.meta.changes < 1000) break;
    }
    return removed;
  }
}
