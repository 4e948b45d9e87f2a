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

// A batch's rows travel as one JSON array of tuples per statement instead of one statement per
// record (issue 10: 40 statements cost a 20-record batch more than its round trip). Strings in
// the tuples (a record's JSON, its field values) come back out of `->>` exactly as they went in.
const CHANGES = `INSERT INTO changes (record_id, version, type, at, by, write_id, record)
  SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6
  FROM json_each(?1) ORDER BY key`;
// A tuple of two is a guard (as GUARD: every column kept), of eight a new state (as UPDATE).
const UPDATES = `UPDATE records SET
    version = CASE records.version WHEN u.expected THEN coalesce(u.version, records.version) END,
    name = iif(u.version IS NULL, records.name, u.name),
    field_values = iif(u.version IS NULL, records.field_values, u.field_values),
    deleted = iif(u.version IS NULL, records.deleted, u.deleted),
    updated_at = iif(u.version IS NULL, records.updated_at, u.updated_at),
    updated_by = iif(u.version IS NULL, records.updated_by, u.updated_by)
  FROM (SELECT value ->> 0 AS id, value ->> 1 AS expected, value ->> 2 AS version, value ->> 3 AS name,
      value ->> 4 AS field_values, value ->> 5 AS deleted, value ->> 6 AS updated_at, value ->> 7 AS updated_by
    FROM json_each(?1)) AS u
  WHERE records.id = u.id`;
/**
 * Characters of tuples per statement: D1 refuses a value over 2 MB, and a UTF-16 character is
 * at most 3 bytes of UTF-8. A longer tuple (a record near its 1 MiB bound) gets its own
 * one-record statement, as any other write does.
 */
const MAX_TUPLE_CHARS = 600_000;

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

/**
 * Packs JSON tuples, in order, into JSON arrays of at most `max` characters; a tuple longer than
 * that stays alone, given by its index. The statements keep the tuples' order.
 */
export function packTuples(tuples: readonly string[], max: number): (string | number)[] {
  const packed: (string | number)[] = [];
  let open: string[] = [];
  let size = 2;
  const close = (): void => {
    if (open.length > 0) packed.push(`[${open.join(',')}]`);
    [open, size] = [[], 2];
  };
  tuples.forEach((tuple, index) => {
    if (tuple.length + 2 > max) {
      close();
      packed.push(index);
      return;
    }
    if (size + tuple.length + 1 > max) close();
    open.push(tuple);
    size += tuple.length + 1;
  });
  close();
  return packed;
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

  /**
   * A batch's change rows (in this order) and its records' new states or guards, in a few
   * statements rather than two per record; the same rows as change(), update() and guard().
   */
  batchWrites(changes: readonly { type: ChangeType; record: RecordOut; writeId: string }[], states: readonly { base: RecordOut; record?: RecordOut }[]): D1PreparedStatement[] {
    const changeTuples = changes.map(({ type, record, writeId }) => JSON.stringify([record.id, record.version, type, record.updatedAt, record.updatedBy, writeId, JSON.stringify(record)]));
    const stateTuples = states.map(({ base, record: r }) =>
      JSON.stringify(r === undefined ? [base.id, base.version] : [r.id, base.version, r.version, r.name, JSON.stringify(r.fieldValues), r.deleted ? 1 : 0, r.updatedAt, r.updatedBy]),
    );
    const state = ({ base, record }: { base: RecordOut; record?: RecordOut }): D1PreparedStatement =>
      record === undefined ? this.guard(base.id, base.version) : this.update(record, base.version);
    return [
      ...packTuples(changeTuples, MAX_TUPLE_CHARS).map((p) => {
        if (typeof p === 'string') return this.db.prepare(CHANGES).bind(p);
        const { type, record, writeId } = changes[p] as (typeof changes)[number];
        return this.change(type, record, writeId);
      }),
      ...packTuples(stateTuples, MAX_TUPLE_CHARS).map((p) => (typeof p === 'string' ? this.db.prepare(UPDATES).bind(p) : state(states[p] as (typeof states)[number]))),
    ];
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
