import type { NewRecord } from '../domain/create.ts';
import type { ChangeType } from '../domain/patch.ts';
import { createdRecordTemplate } from '../domain/record-json.ts';
import type { RecordOut } from '../schemas/record.ts';
import type { KeyClaim, StoredAnswer } from './idempotency.ts';
import type { Meter } from './meter.ts';
import { isTransient, retrying, sleep } from './retry.ts';

/**
 * Every write of records, exactly once (CONTRACT §8). A write is one D1 batch that starts with
 * the change rows it commits (the outbox of the change feed), each under a write id that is
 * unique in the `changes` table. So a write can always be sent again: if an earlier attempt
 * committed (its reply was lost), the repeat fails on that index before it changes anything,
 * and the whole batch rolls back. The records' version guards come next: a write computed on
 * a state that moved on aborts with `version_conflict`. Idempotency answers come last.
 */

/** A write lost to a concurrent one: nothing was written; recompute on the stored state. */
export class VersionConflict extends Error {
  constructor() {
    super('version_conflict');
    this.name = 'VersionConflict';
  }
}

/** The first attempt of a write found its change rows already there: an earlier sender committed it. */
export class AlreadyCommitted extends Error {
  constructor() {
    super('already_committed');
    this.name = 'AlreadyCommitted';
  }
}

/** D1 never told whether the write committed, until the deadline. */
export class OutcomeUnknown extends Error {
  constructor() {
    super('outcome_unknown');
    this.name = 'OutcomeUnknown';
  }
}

// See migrations 0002 and 0003: a stale expected version yields NULL, which the trigger refuses;
// a guard keeps the version and changes nothing else, which the trigger allows.
const UPDATE = `UPDATE records SET version = CASE version WHEN ?2 THEN ?3 END,
    name = ?4, field_values = ?5, deleted = ?6, updated_at = ?7, updated_by = ?8
  WHERE id = ?1`;
const GUARD = 'UPDATE records SET version = CASE version WHEN ?2 THEN version END WHERE id = ?1';

const CHANGE = `INSERT INTO changes (record_id, version, type, at, by, write_id, record) VALUES (?, ?, ?, ?, ?, ?, ?)`;

// The id is max + 1 (rows are never deleted, so it is never reused); the fallback name needs
// the id, so it is built here: keep it in step with fallbackName() in domain/name.ts.
const INSERT = `INSERT INTO records (id, object_id, object_version, name, field_values, creation_type,
    version, deleted, owned_by, created_at, created_by, updated_at, updated_by, is_template)
  SELECT n.id, ?1, ?2, coalesce(?3, ?4 || ' #' || n.id), ?5, ?6, 1, 0, ?7, ?8, ?7, ?8, ?7, ?9
  FROM (SELECT coalesce(max(id), 0) + 1 AS id FROM records) AS n
  RETURNING id`;
const SHARE_LAST = `INSERT INTO record_workspaces (record_id, workspace_id)
  SELECT (SELECT max(id) FROM records), value FROM json_each(?)`;
// The created record's JSON is assembled around its id exactly as createdRecord() serializes it.
const CHANGE_OF_LAST = `INSERT INTO changes (record_id, version, type, at, by, write_id, record)
  SELECT id, 1, 'created', ?1, ?2, ?3, '{"id":' || id || ?4 || coalesce(?5, ?6 || id || '"') || ?7
  FROM (SELECT max(id) AS id FROM records)`;
const CHANGES_OF_WRITE = `SELECT record FROM changes WHERE write_id > ?1 || '/' AND write_id < ?1 || '0' ORDER BY seq`;

const ANSWER = `INSERT INTO idempotency_keys (user_id, method, path, key, fingerprint, token, state, status, headers, body, created_at, lease_until)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'done', ?7, ?8, BODY, ?10, ?10)
  ON CONFLICT (user_id, key, method, path) DO UPDATE SET state = 'done', status = excluded.status,
    headers = excluded.headers, body = excluded.body,
    token = CASE WHEN idempotency_keys.token = excluded.token THEN excluded.token END`;
// `token` is NOT NULL: a write whose claim was taken over (its lease ran out) aborts here.

/** Items of a batch answer around each record's JSON: `[{"status":"Succeeded","record":…},…]`. */
export function batchAnswer(recordJsons: readonly string[]): string {
  return `[${recordJsons.map((json) => `{"status":"Succeeded","record":${json}}`).join(',')}]`;
}

export class RecordWrites {
  constructor(
    private readonly db: D1Database,
    private readonly meter: Meter,
  ) {}

  /** One change row: `record` is the state right after the change, as the write answers it. */
  change(type: ChangeType, record: RecordOut, writeId: string): D1PreparedStatement {
    return this.db
      .prepare(CHANGE)
      .bind(record.id, record.version, type, record.updatedAt, record.updatedBy, writeId, JSON.stringify(record));
  }

  /** The new state of a record, guarded by the version it was computed from. */
  update(record: RecordOut, expectedVersion: number): D1PreparedStatement {
    return this.db
      .prepare(UPDATE)
      .bind(record.id, expectedVersion, record.version, record.name, JSON.stringify(record.fieldValues), record.deleted ? 1 : 0, record.updatedAt, record.updatedBy);
  }

  /** Fails the write unless the record is still at `version` (an element answered unchanged). */
  guard(id: number, version: number): D1PreparedStatement {
    return this.db.prepare(GUARD).bind(id, version);
  }

  /** Stores the answer of a claimed Idempotency-Key with the write (CONTRACT §11). */
  answer(claim: KeyClaim, stored: StoredAnswer, now: number): D1PreparedStatement {
    return this.answerStatement(claim, stored.status, stored.headers, now, '?9', stored.body);
  }

  /** Inserts new records, their sharing and their change rows, under `writeId/<index>`. */
  inserts(records: readonly NewRecord[], writeId: string): D1PreparedStatement[] {
    return records.flatMap((r, index) => {
      const t = createdRecordTemplate(r);
      return [
        this.db
          .prepare(INSERT)
          .bind(r.objectId, r.objectVersion, r.name ?? null, r.objectName, JSON.stringify(r.fieldValues), r.creationType, r.userId, r.now, r.isTemplate ? 1 : 0),
        this.db.prepare(SHARE_LAST).bind(JSON.stringify(r.sharedWorkspaceIds)),
        this.db.prepare(CHANGE_OF_LAST).bind(r.now, r.userId, `${writeId}/${index}`, t.afterId, t.nameJson, t.namePrefix, t.afterName),
      ];
    });
  }

  /** The answer of a create, assembled in SQL from the change rows the same batch inserts. */
  answerOfCreate(claim: KeyClaim, writeId: string, headers: Readonly<Record<string, string>>, now: number): D1PreparedStatement {
    const body = `(SELECT '[' || group_concat('{"status":"Succeeded","record":' || record || '}', ',') || ']' FROM (${CHANGES_OF_WRITE.replaceAll('?1', '?9')}))`;
    return this.answerStatement(claim, 201, headers, now, body, writeId);
  }

  private answerStatement(claim: KeyClaim, status: number, headers: Readonly<Record<string, string>>, now: number, body: string, param: string): D1PreparedStatement {
    return this.db
      .prepare(ANSWER.replace('BODY', body))
      .bind(claim.userId, claim.method, claim.path, claim.key, claim.fingerprint, claim.token, status, JSON.stringify(headers), param, now);
  }

  /** The records a create committed, as it answered them: after its reply was lost. */
  async createdBy(writeId: string): Promise<string[]> {
    const { results } = await retrying(() => this.meter.d1(() => this.db.prepare(CHANGES_OF_WRITE).bind(writeId).all<{ record: string }>()));
    return results.map((row) => row.record);
  }

  /** The state a patch call committed, if it did (a call sent again after its object restarted). */
  async committedCall(callId: string): Promise<RecordOut | undefined> {
    const row = await retrying(() => this.meter.d1(() => this.db.prepare('SELECT record FROM changes WHERE write_id = ?').bind(callId).first<{ record: string }>()));
    return row === null ? undefined : (JSON.parse(row.record) as RecordOut);
  }

  /**
   * Commits one write, sending it again after a transient failure until `deadline`: safe,
   * because a repeat of a committed write fails on its change rows and changes nothing.
   * Returns the D1 results of the attempt that committed, or undefined when an earlier attempt
   * did (its reply was lost). Throws VersionConflict, AlreadyCommitted (the first attempt
   * found its change rows: another sender committed this very write), OutcomeUnknown, or
   * storage's own refusal.
   */
  async commit<T = unknown>(statements: D1PreparedStatement[], deadline: number): Promise<D1Result<T>[] | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.meter.d1(() => this.db.batch<T>(statements));
      } catch (error) {
        const message = error instanceof Error ? error.message : '';
        if (message.includes('version_conflict')) throw new VersionConflict();
        if (/UNIQUE constraint failed: changes\.write_id/.test(message)) {
          if (attempt > 1) return undefined;
          throw new AlreadyCommitted();
        }
        if (!isTransient(error)) throw error;
        if (Date.now() >= deadline) throw new OutcomeUnknown();
        await sleep(Math.random() * Math.min(200, 10 * 2 ** attempt));
      }
    }
  }
}
