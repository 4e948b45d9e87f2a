import { systemClock, type Clock } from '../core/clock.ts';
import { failedWith, type LedgerOutcome } from '../core/ledger.ts';
import type { InputProblem } from '../core/problem.ts';
import { outcomeUnknown } from '../http/errors.ts';
import { diffOf, undo, type Diff } from '../domain/change.ts';
import type { NewRecord } from '../domain/create.ts';
import { TENANT_BLOCK } from '../domain/tenant.ts';
import type { ChangeType } from '../domain/patch.ts';
import { createdRecordTemplate } from '../domain/record-json.ts';
import {
  fallbackKeys,
  foldsOf,
  PREFIX_TERM,
  recordKeys,
  WHOLE_NAME_TERM,
  type RecordKeys,
} from '../domain/record-keys.ts';
import type { FieldValueOut, RecordOut } from '../schemas/record.ts';
import type { KeyClaim } from './idempotency.ts';
import type { UniqueClaim } from './record-index.ts';
import type { Meter } from './meter.ts';
import { retrying } from './retry.ts';
import { keyedRecords, RECORD_COLUMNS, recordsOf, type RecordReadRow } from './store.ts';
import type { D1 } from './sessions.ts';

/**
 * Every write of the service, exactly once. A write is one D1 batch that starts with its
 * ledger rows (`writes`, one per write id it finishes), so sending a batch again can never apply
 * it twice: if an earlier attempt committed (its reply was lost, an object restarted, a twin
 * ran it), the repeat fails on the ledger's primary key before it changes anything, and the
 * sender reads what the ledger holds for its ids instead. The records' version guards come next
 * (a write computed on a state that moved on aborts with `version_conflict`), then the change
 * rows (diffs), then the answers of Idempotency-Keys.
 */

/** A write lost to a concurrent one: nothing was written; recompute on the stored state. */
export class VersionConflict extends Error {
  constructor() {
    super('version_conflict');
    this.name = 'VersionConflict';
  }
}

/**
 * A write's records are not in this database any more: their tenant left it. Its message names
 * the refusal a write there gets from D1, and it is answered the same way.
 */
export class RecordsLeft extends Error {
  constructor() {
    super('tenant_not_here: the records of this write are no longer in this database');
    this.name = 'RecordsLeft';
  }
}

/** D1 never told whether the write committed, until the deadline. */
export class OutcomeUnknown extends Error {
  constructor() {
    super('outcome_unknown');
    this.name = 'OutcomeUnknown';
  }
}

/** How a commit ended: this attempt committed, or some ids were already finished (by whom, read from the ledger). */
export type Committed<T> = { committed: D1Result<T>[] } | { finished: Map<string, LedgerOutcome> };

const LEDGER = 'INSERT INTO writes (id, outcome) SELECT value ->> 0, value ->> 1 FROM json_each(?1)';
// The same rows, for a write whose records must still be at the versions it read (`?2`: `[[id,
// version], …]`): when one moved on, the outcome is NULL, and the NOT NULL column aborts the batch
// at its first statement, before any record or index is touched: a lost race costs one statement.
// An id already finished is inserted as it is, to fail on its key: its own commit (a retry after
// a lost reply) moved the versions, and what it committed is the answer, not a lost race.
const LEDGER_GUARDED = `INSERT INTO writes (id, outcome)
  SELECT j.value ->> 0, iif((SELECT count(*) FROM json_each(?2) g JOIN records r
      ON r.id = g.value ->> 0 AND r.version = g.value ->> 1) = json_array_length(?2)
      OR EXISTS (SELECT 1 FROM writes w WHERE w.id = j.value ->> 0), j.value ->> 1, NULL)
  FROM json_each(?1) j`;
// Ids and change numbers lie in their tenant's block (see domain/tenant.ts); SQL finds the block
// from an id it is given (a record's object, a change's record): its first id and its size.
const B = TENANT_BLOCK;
// D1 binds a JavaScript number as REAL: the id is made an integer before it is divided.
const blockOf = (id: string): string => `CAST(${id} AS INTEGER) / ${B} * ${B}`;
/** The highest record id in the block starting at `lo` (an SQL expression), or `lo`. */
const topRecord = (lo: string): string =>
  `(SELECT coalesce(max(id), ${lo}) FROM records WHERE id >= ${lo} AND id < ${lo} + ${B})`;
/** The next change number in the block starting at `lo`: the newest change is never pruned, so none comes back. */
const nextSeq = (lo: string): string =>
  `(SELECT coalesce(max(seq), ${lo}) + 1 FROM changes WHERE seq >= ${lo} AND seq < ${lo} + ${B})`;

// A create's ids are max + 1 onwards in its tenant's block (`?3`: one of its objects; records are
// never deleted), known in SQL before its inserts run.
const LEDGER_CREATE = `INSERT INTO writes (id, outcome)
  SELECT ?1, json_object('c', json_array(${topRecord(blockOf('?3'))} + 1, ?2))`;
// An upsert's records in request order: `[id, version]` for a record it updated, `[null, k]` for
// its k-th create, whose id is max + 1 + k (the ledger row goes in before the inserts).
const LEDGER_UPSERT = `INSERT INTO writes (id, outcome)
  SELECT ?1, json_object('r', (SELECT json_group_array(json(x)) FROM (SELECT CASE WHEN j.value ->> 0 IS NULL
      THEN json_array(n.first + (j.value ->> 1), 1) ELSE j.value END AS x FROM json_each(?2) j ORDER BY j.key)),
    'u', json(?3))
  FROM (SELECT ${topRecord(blockOf('?4'))} + 1 AS first) AS n`;
const OUTCOMES = 'SELECT id, outcome FROM writes WHERE id IN (SELECT value FROM json_each(?1))';

// See migrations 0002 and 0003: a stale expected version yields NULL, which the trigger refuses;
// a guard keeps the version and changes nothing else, which the trigger allows.
// Keys bound NULL are the stored ones: the name (and the text values) they come from did not change.
const UPDATE = `UPDATE records SET version = CASE version WHEN ?2 THEN ?3 END,
    name = ?4, field_values = ?5, deleted = ?6, updated_at = ?7, updated_by = ?8, name_key = coalesce(?9, name_key),
    terms = coalesce(?10, terms), folds = iif(?12, folds, ?11)
  WHERE id = ?1`;
const GUARD = 'UPDATE records SET version = CASE version WHEN ?2 THEN version END WHERE id = ?1';

const CHANGE = `INSERT INTO changes (seq, record_id, version, type, at, by, data, was)
  VALUES (${nextSeq(blockOf('?1'))}, ?1, ?2, ?3, ?4, ?5, ?6, ?7)`;
// A batch's rows travel as one JSON array of tuples per statement instead of one statement per
// record (40 statements cost a 20-record batch more than its round trip). Strings in the
// tuples (a diff, a record's field values) come back out of `->>` exactly as they went in.
// The k-th takes the tenant's next number + k: SQLite reads the whole SELECT (which reads the table
// it inserts into) before it inserts. A write's records are all its tenant's.
const CHANGES = `INSERT INTO changes (seq, record_id, version, type, at, by, data, was)
  SELECT n.seq + key, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6
  FROM json_each(?1), (SELECT ${nextSeq(blockOf("?1 ->> '$[0][0]'"))} AS seq) AS n ORDER BY key`;
// A tuple of two is a guard (as GUARD: every column kept), of twelve a new state (as UPDATE).
const UPDATES = `UPDATE records SET
    version = CASE records.version WHEN u.expected THEN coalesce(u.version, records.version) END,
    name = iif(u.version IS NULL, records.name, u.name),
    field_values = iif(u.version IS NULL, records.field_values, u.field_values),
    deleted = iif(u.version IS NULL, records.deleted, u.deleted),
    updated_at = iif(u.version IS NULL, records.updated_at, u.updated_at),
    updated_by = iif(u.version IS NULL, records.updated_by, u.updated_by),
    name_key = iif(u.version IS NULL OR u.name_key IS NULL, records.name_key, u.name_key),
    terms = iif(u.version IS NULL OR u.terms IS NULL, records.terms, u.terms),
    folds = iif(u.version IS NULL OR u.same_folds, records.folds, u.folds)
  FROM (SELECT value ->> 0 AS id, value ->> 1 AS expected, value ->> 2 AS version, value ->> 3 AS name,
      value ->> 4 AS field_values, value ->> 5 AS deleted, value ->> 6 AS updated_at, value ->> 7 AS updated_by,
      value ->> 8 AS name_key, value ->> 9 AS terms, value ->> 10 AS folds, value ->> 11 AS same_folds
    FROM json_each(?1)) AS u
  WHERE records.id = u.id`;
/**
 * Characters of tuples per statement: D1 refuses a value over 2,000,000 bytes, and a UTF-16
 * unit is at most 3 bytes of UTF-8. A longer tuple (a record near its 1 MiB bound) gets its
 * own one-record statement, as any other write does.
 */
export const MAX_TUPLE_CHARS = 600_000;

// The id is max + 1 (rows are never deleted, so it is never reused); the fallback name needs
// the id, so it is built here with its keys: keep it in step with fallbackName() in
// domain/name.ts and fallbackKeys() in domain/record-keys.ts. The id is one word of digits:
// its terms are `=<id>`, its first letters and the whole name's.
const INSERT = `INSERT INTO records (id, object_id, object_version, name, field_values, creation_type,
    version, deleted, owned_by, created_at, created_by, updated_at, updated_by, is_template, name_key, terms, folds)
  SELECT n.id, ?1, ?2, coalesce(?3, ?4 || ' #' || n.id), ?5, ?6, 1, 0, ?7, ?8, ?7, ?8, ?7, ?9,
    coalesce(?10, ltrim(?11 || ' ' || n.id) || ?15),
    iif(?3 IS NOT NULL, ?12, (SELECT json_group_array(value) FROM (SELECT value FROM json_each(?12)
      UNION SELECT '=' || n.id UNION SELECT substr(n.id, 1, s.value) FROM json_each('${JSON.stringify(
        Array.from({ length: PREFIX_TERM }, (_, i) => i + 1),
      )}') s
      UNION SELECT '~' || ltrim(?16 || ' ' || n.id) WHERE length(ltrim(?16 || ' ' || n.id)) <= ${WHOLE_NAME_TERM}))),
    iif(?3 IS NULL AND ?14 IS NOT NULL, json_set(?13, '$."#"', ?14 || ' #' || n.id), ?13)
  FROM (SELECT ${topRecord(blockOf('?1'))} + 1 AS id) AS n
  RETURNING id`;
// The object of the first record of a JSON array of records (`[insert parameters, …]` each).
const FIRST_OBJECT = "json_extract(?1, '$[0][0][0]')";
// The same insert for a JSON array of records (`[insert parameters, workspace ids, change
// parameters]` each): the k-th takes id max + 1 + k. SQLite reads the whole SELECT before it
// inserts (it reads the table it inserts into), so max() is the one before the first.
const INSERT_MANY = INSERT.replace(/\?(\d+)/g, (_, k: string) => `(j.value -> '$[0]' ->> ${Number(k) - 1})`)
  .replace(/\bn\.id\b/g, '(n.id + j.key)')
  .replace(
    /FROM \(SELECT \(SELECT coalesce\(max\(id\).*\) \+ 1 AS id\) AS n\s+RETURNING id$/s,
    `FROM json_each(?1) j, (SELECT ${topRecord(blockOf(FIRST_OBJECT))} + 1 AS id) AS n ORDER BY j.key`,
  );
const SHARE_MANY = `INSERT INTO record_workspaces (record_id, workspace_id)
  SELECT n.first + j.key, w.value FROM json_each(?1) j, json_each(j.value, '$[1]') w,
    (SELECT ${topRecord(blockOf(FIRST_OBJECT))} - CAST(?2 AS INTEGER) + 1 AS first) AS n
  ORDER BY j.key`;
const CHANGES_MANY = `INSERT INTO changes (seq, record_id, version, type, at, by, data)
  SELECT n.seq + j.key, n.first + j.key, 1, 'created', c ->> 0, c ->> 1,
    '{"id":' || (n.first + j.key) || (c ->> 2) || coalesce(c ->> 3, (c ->> 4) || (n.first + j.key) || '"') || (c ->> 5)
  FROM (SELECT key, value -> '$[2]' AS c FROM json_each(?1)) j,
    (SELECT ${topRecord(blockOf(FIRST_OBJECT))} - CAST(?2 AS INTEGER) + 1 AS first,
      ${nextSeq(blockOf(FIRST_OBJECT))} AS seq) AS n
  ORDER BY j.key`;
if (!INSERT_MANY.includes('json_each(?1) j') || INSERT_MANY.includes('RETURNING'))
  throw new Error('INSERT no longer has the shape INSERT_MANY is made from');

// The record just inserted is the highest of its tenant's block (`?2`: its object).
const SHARE_LAST = `INSERT INTO record_workspaces (record_id, workspace_id)
  SELECT ${topRecord(blockOf('?2'))}, value FROM json_each(?1)`;
// The created record's JSON is assembled around its id exactly as createdRecord() serializes it.
const CHANGE_OF_LAST = `INSERT INTO changes (seq, record_id, version, type, at, by, data)
  SELECT ${nextSeq(blockOf('?7'))}, id, 1, 'created', ?1, ?2,
    '{"id":' || id || ?3 || coalesce(?4, ?5 || id || '"') || ?6
  FROM (SELECT ${topRecord(blockOf('?7'))} AS id)`;
const CREATED = `SELECT data FROM changes WHERE record_id BETWEEN ?1 AND ?2 
  AND version = 1 AND type = 'created' ORDER BY record_id`;

const STATES = `SELECT ${RECORD_COLUMNS} FROM records r WHERE r.id IN (SELECT value ->> 0 FROM json_each(?1))`;
// Whether the tenant of record `?1` left this database: its rows here may be half removed, and no
// answer is read from them.
const LEFT = `SELECT EXISTS (SELECT 1 FROM departures WHERE tenant_id = CAST(?1 AS INTEGER) / ${TENANT_BLOCK} + 1
  AND state IN ('switching', 'moved')) AS gone`;
// The live holders of unique values (`[objectId, field, key]` each), read whole: `i` is the claim's index.
const HOLDING = `SELECT j.key AS i, ${RECORD_COLUMNS} FROM json_each(?1) j JOIN record_index ri
    ON ri.object_id = j.value ->> 0 AND ri.field = j.value ->> 1 AND ri.unique_key = j.value ->> 2
  JOIN records r ON r.id = ri.record_id`;
const MOVED = `SELECT ${RECORD_COLUMNS} FROM json_each(?1) g JOIN records r ON r.id = g.value ->> 0
  WHERE r.version <> g.value ->> 1`;
const UNDONE = `SELECT c.record_id, c.version, c.type, c.at, c.by, c.data, c.was
  FROM json_each(?1) AS j JOIN changes c ON c.record_id = j.value ->> 0 AND c.version > j.value ->> 1
  ORDER BY c.record_id, c.version DESC`;

// `token` is NOT NULL: a write whose claim was taken over (its lease ran out) aborts here.
const KEY_DONE = `INSERT INTO idempotency_keys (user_id, method, path, key, fingerprint, token, state, status,
  headers, write_id, shape, created_at, lease_until)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'done', ?7, ?8, ?9, ?10, ?11, ?11)
  ON CONFLICT (user_id, key, method, path) DO UPDATE SET state = 'done', status = excluded.status,
    headers = excluded.headers, write_id = excluded.write_id, shape = excluded.shape, body = NULL,
    token = CASE WHEN idempotency_keys.token = excluded.token THEN excluded.token END`;

// A write made only while the records it read are at those versions (`?3`: `[[id, version],
// …]`), in one round trip that answers either way: its ledger row goes in only then, every other
// statement acts only when that row is in, and a last one reads the records that moved on when
// it is not. A lost race thus costs one round trip and no abort. An id already finished is
// inserted as it is, to fail on its key.
const LEDGERED = (param: string): string => `EXISTS (SELECT 1 FROM writes WHERE id = ${param})`;
const LEDGER_WHILE = `INSERT INTO writes (id, outcome) SELECT ?1, ?2
  WHERE (SELECT count(*) FROM json_each(?3) g JOIN records r
      ON r.id = g.value ->> 0 AND r.version = g.value ->> 1) = json_array_length(?3)
    OR ${LEDGERED('?1')}`;
const UPDATES_WHILE = `${UPDATES} AND ${LEDGERED('?2')}`;
const CHANGES_WHILE = CHANGES.replace(' ORDER BY key', ` WHERE ${LEDGERED('?2')} ORDER BY key`);
const KEY_DONE_WHILE = KEY_DONE.replace(/VALUES \(([^)]*)\)/, `SELECT $1 WHERE ${LEDGERED('?9')}`);
const MOVED_UNLESS = `${MOVED} AND NOT ${LEDGERED('?2')}`;
if (CHANGES_WHILE === CHANGES || KEY_DONE_WHILE === KEY_DONE)
  throw new Error('CHANGES or KEY_DONE no longer has the shape their conditional forms are made from');

/** How a completed key's body is rebuilt from its write: one record, batch items, or an answer as stored. */
export type AnswerShape = 'record' | 'items' | 'answer';

/** What a completed Idempotency-Key stores beside its write id. */
export interface KeyAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  shape: AnswerShape;
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

/** One change of a record to store: the state before it and the state after. */
export interface ChangeOf {
  type: Exclude<ChangeType, 'created'>;
  prev: RecordOut;
  next: RecordOut;
}

/** Whether two lists of field values hold the same text values (the ones a record's folds come from). */
function sameTexts(a: readonly FieldValueOut[], b: readonly FieldValueOut[]): boolean {
  const texts = (values: readonly FieldValueOut[]) => values.filter(({ value }) => typeof value === 'string');
  const [x, y] = [texts(a), texts(b)];
  return x.length === y.length && x.every((v, i) => v.fieldName === y[i]?.fieldName && v.value === y[i]?.value);
}

/**
 * A record's new state as UPDATE binds it (and UPDATES reads a tuple): its columns, then its keys.
 * Keys that `prev` (the stored state it replaces) already has are not computed again: the name's
 * when the name did not change, the folds when neither the name nor a text value did (see
 * keyedRecords).
 */
function stateOf(record: RecordOut, prev: RecordOut): unknown[] {
  const sameName = keyedRecords.has(prev) && prev.name === record.name;
  const sameFolds = sameName && sameTexts(prev.fieldValues, record.fieldValues);
  const keys = sameName ? undefined : recordKeys(record.name, record.fieldValues);
  keyedRecords.add(record);
  return [
    record.id,
    prev.version,
    record.version,
    record.name,
    JSON.stringify(record.fieldValues),
    record.deleted ? 1 : 0,
    record.updatedAt,
    record.updatedBy,
    keys?.nameKey ?? null,
    keys?.terms ?? null,
    sameFolds ? null : (keys?.folds ?? foldsOf(record.name, record.fieldValues)),
    sameFolds ? 1 : 0,
  ];
}

/**
 * Characters of a diff kept in one value: D1 takes at most 2,000,000 bytes a value, and a
 * character is at most 3 bytes. A longer diff keeps its previous values apart (`was`).
 */
const MAX_DIFF_CHARS = 600_000;

const changeTuple = ({ type, prev, next }: ChangeOf): unknown[] => {
  const diff = diffOf(prev, next);
  const whole = JSON.stringify(diff);
  const apart = whole.length > MAX_DIFF_CHARS && diff.was !== undefined;
  const { was, ...rest } = diff;
  return [
    next.id,
    next.version,
    type,
    next.updatedAt,
    next.updatedBy,
    apart ? JSON.stringify(rest) : whole,
    apart ? JSON.stringify(was) : null,
  ];
};

/**
 * One record's part of a write, its JSON made once: its new state (or only its guard, when it
 * did not change) and its change row. A write that runs again after a lost race makes it again
 * only for the records that moved on.
 */
export interface RecordPart {
  base: RecordOut;
  record?: RecordOut;
  state: string;
  change?: string;
}

export function recordPart(base: RecordOut, record?: RecordOut): RecordPart {
  if (record === undefined) return { base, state: JSON.stringify([base.id, base.version]) };
  return {
    base,
    record,
    state: JSON.stringify(stateOf(record, base)),
    change: JSON.stringify(changeTuple({ type: 'updated', prev: base, next: record })),
  };
}

export class RecordWrites {
  constructor(
    private readonly db: D1,
    private readonly meter: Meter,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * The ledger rows of the write ids this batch finishes, one statement: always first. With
   * `versions` (`[id, version]` of the records the write read), the batch fails at once as a
   * VersionConflict when any of them moved on.
   */
  ledger(
    entries: readonly { id: string; outcome: LedgerOutcome }[],
    versions?: readonly [number, number][],
  ): D1PreparedStatement {
    const rows = JSON.stringify(entries.map(({ id, outcome }) => [id, JSON.stringify(outcome)]));
    return versions === undefined
      ? this.db.prepare(LEDGER).bind(rows)
      : this.db.prepare(LEDGER_GUARDED).bind(rows, JSON.stringify(versions));
  }

  /** A create's ledger row: its records' ids (in the block of `objectId`'s tenant) are known only in SQL. */
  ledgerOfCreate(id: string, count: number, objectId: number): D1PreparedStatement {
    return this.db.prepare(LEDGER_CREATE).bind(id, count, objectId);
  }

  /** An upsert's ledger row: the ids of the records it creates are known only in SQL. */
  ledgerOfUpsert(
    id: string,
    records: readonly ([number, number] | [null, number])[],
    results: readonly string[],
    objectId: number,
  ): D1PreparedStatement {
    return this.db.prepare(LEDGER_UPSERT).bind(id, JSON.stringify(records), JSON.stringify(results), objectId);
  }

  /** One change row: the diff from `prev` to `next`. */
  change(change: ChangeOf): D1PreparedStatement {
    return this.db.prepare(CHANGE).bind(...changeTuple(change));
  }

  /** The new state of a record, guarded by the version of `prev`, the stored state it was computed from. */
  update(record: RecordOut, prev: RecordOut): D1PreparedStatement {
    return this.db.prepare(UPDATE).bind(...stateOf(record, prev));
  }

  /** Fails the write unless the record is still at `version` (an element answered unchanged). */
  guard(id: number, version: number): D1PreparedStatement {
    return this.db.prepare(GUARD).bind(id, version);
  }

  /**
   * A batch's records' new states or guards and its change rows, in a few statements rather
   * than two per record; the same rows as update(), guard() and change().
   */
  batchWrites(
    states: readonly { base: RecordOut; record?: RecordOut }[],
    changes: readonly ChangeOf[],
  ): D1PreparedStatement[] {
    const stateTuples = states.map(({ base, record: r }) =>
      JSON.stringify(r === undefined ? [base.id, base.version] : stateOf(r, base)),
    );
    const state = ({ base, record }: { base: RecordOut; record?: RecordOut }): D1PreparedStatement =>
      record === undefined ? this.guard(base.id, base.version) : this.update(record, base);
    const changeTuples = changes.map((change) => JSON.stringify(changeTuple(change)));
    return [
      ...packTuples(stateTuples, MAX_TUPLE_CHARS).map((p) =>
        typeof p === 'string' ? this.db.prepare(UPDATES).bind(p) : state(states[p] as (typeof states)[number]),
      ),
      ...packTuples(changeTuples, MAX_TUPLE_CHARS).map((p) =>
        typeof p === 'string' ? this.db.prepare(CHANGES).bind(p) : this.change(changes[p] as ChangeOf),
      ),
    ];
  }

  /**
   * A write of records' new states (or guards), their change rows and its key, made only while
   * the records are at the versions read (see LEDGER_WHILE): its statements, whose last reads the
   * records that moved on when it was not made. Undefined when a record is too large to travel
   * packed with the others: that write goes as batchWrites() does, and a lost race aborts it.
   */
  writesWhile(
    writeId: string,
    outcome: LedgerOutcome,
    parts: readonly RecordPart[],
    key?: { claim: KeyClaim; answer: KeyAnswer; now: number },
  ): D1PreparedStatement[] | undefined {
    const statePacks = packTuples(
      parts.map((part) => part.state),
      MAX_TUPLE_CHARS,
    );
    const changePacks = packTuples(
      parts.flatMap((part) => (part.change === undefined ? [] : [part.change])),
      MAX_TUPLE_CHARS,
    );
    if ([...statePacks, ...changePacks].some((pack) => typeof pack === 'number')) return undefined;
    const versions = JSON.stringify(parts.map(({ base }) => [base.id, base.version]));
    return [
      this.db.prepare(LEDGER_WHILE).bind(writeId, JSON.stringify(outcome), versions),
      ...statePacks.map((pack) => this.db.prepare(UPDATES_WHILE).bind(pack, writeId)),
      ...changePacks.map((pack) => this.db.prepare(CHANGES_WHILE).bind(pack, writeId)),
      ...(key === undefined ? [] : [this.keyStatement(KEY_DONE_WHILE, key.claim, writeId, key.answer, key.now)]),
      this.db.prepare(MOVED_UNLESS).bind(versions, writeId),
    ];
  }

  /**
   * The records that moved on, as the last statement of writesWhile() read them (none: it was
   * made, its ledger row, the first statement, went in). Not made while none moved on means its
   * records are no longer here: their tenant left this database (its rows are removed after a
   * move), which is refused as any write there is.
   */
  movedOf(results: readonly D1Result<unknown>[]): Map<number, RecordOut> {
    if (results[0]?.meta.changes === 1) return new Map();
    const rows = (results.at(-1)?.results ?? []) as RecordReadRow[];
    if (rows.length === 0) throw new RecordsLeft();
    return new Map(recordsOf(rows).map((record) => [record.id, record]));
  }

  /** Inserts new records, their sharing and their `created` change rows. */
  inserts(records: readonly NewRecord[]): D1PreparedStatement[] {
    return records.flatMap((r) => {
      const { record, change } = insertTuples(r);
      return [
        this.db.prepare(INSERT).bind(...record),
        this.db.prepare(SHARE_LAST).bind(JSON.stringify(r.sharedWorkspaceIds), r.objectId),
        this.db.prepare(CHANGE_OF_LAST).bind(...change, r.objectId),
      ];
    });
  }

  /**
   * The same rows as inserts(), in three statements per pack of records instead of three per
   * record (an import's chunk of 100 records: 3 statements, not 300). The records take
   * consecutive ids in their order.
   */
  insertsPacked(records: readonly NewRecord[]): D1PreparedStatement[] {
    const tuples = records.map((r) => {
      const { record, change } = insertTuples(r);
      return JSON.stringify([record, r.sharedWorkspaceIds, change]);
    });
    return packTuples(tuples, MAX_TUPLE_CHARS).flatMap((pack) => {
      if (typeof pack === 'number') return this.inserts([records[pack] as NewRecord]);
      const count = (JSON.parse(pack) as unknown[]).length;
      return [
        this.db.prepare(INSERT_MANY).bind(pack),
        this.db.prepare(SHARE_MANY).bind(pack, count),
        this.db.prepare(CHANGES_MANY).bind(pack, count),
      ];
    });
  }

  /** Completes a claimed Idempotency-Key with its write: the answer is rebuilt from the ledger when replayed. */
  keyDone(claim: KeyClaim, writeId: string, answer: KeyAnswer, now: number): D1PreparedStatement {
    return this.keyStatement(KEY_DONE, claim, writeId, answer, now);
  }

  private keyStatement(sql: string, claim: KeyClaim, writeId: string, answer: KeyAnswer, now: number) {
    return this.db
      .prepare(sql)
      .bind(
        claim.userId,
        claim.method,
        claim.path,
        claim.key,
        claim.fingerprint,
        claim.token,
        answer.status,
        JSON.stringify(answer.headers),
        writeId,
        answer.shape,
        now,
      );
  }

  /**
   * Commits one write, sending it again after a transient failure until `deadline`: safe,
   * because a repeat of a committed write fails on its ledger rows and changes nothing. When
   * any of `ids` is already finished (by this write's earlier attempt or by anyone else), reads
   * what the ledger holds for each of them. Throws VersionConflict, OutcomeUnknown, or storage's
   * own refusal.
   */
  async commit<T = unknown>(
    statements: D1PreparedStatement[],
    ids: readonly string[],
    deadline: number,
  ): Promise<Committed<T>> {
    try {
      return { committed: await this.untilDeadline(deadline, () => this.db.batch<T>(statements)) };
    } catch (error) {
      const message = error instanceof Error ? error.message : '';
      if (message.includes('version_conflict') || /NOT NULL constraint failed: writes\.outcome/.test(message))
        throw new VersionConflict();
      if (!/UNIQUE constraint failed: writes\.id/.test(message)) throw error;
      const finished = await this.outcomes(ids, deadline);
      if (finished.size > 0) return { finished };
      // Finished and pruned within the same breath cannot be: storage contradicts itself.
      throw error;
    }
  }

  /**
   * Closes write `id` as a failure answered with `status`, so that it can never commit later;
   * when it was finished already (it committed), returns that outcome instead. Nothing is
   * answered as failed that committed.
   */
  async closeAsFailed(
    id: string,
    status: number,
    deadline: number,
    problems: readonly InputProblem[] = [],
  ): Promise<LedgerOutcome | undefined> {
    const outcome = failedWith(status, problems);
    const result = await this.commit([this.ledger([{ id, outcome }])], [id], deadline);
    return 'finished' in result ? result.finished.get(id) : undefined;
  }

  /** What the ledger holds for `ids` (those finished). Retried until `deadline`, then OutcomeUnknown. */
  async outcomes(ids: readonly string[], deadline: number): Promise<Map<string, LedgerOutcome>> {
    const rows = await this.untilDeadline(deadline, () =>
      this.db.prepare(OUTCOMES).bind(JSON.stringify(ids)).all<{ id: string; outcome: string }>(),
    );
    return new Map(rows.results.map((row) => [row.id, JSON.parse(row.outcome) as LedgerOutcome]));
  }

  /**
   * The stored state of the records that moved on from the versions a write read (`[id, version]`):
   * what a write that lost a race recomputes on. Retried until `deadline`.
   */
  async moved(versions: readonly [number, number][], deadline: number): Promise<Map<number, RecordOut>> {
    const at = JSON.stringify(versions);
    const rows = await this.untilDeadline(deadline, () => this.db.prepare(MOVED).bind(at).all<RecordReadRow>());
    return new Map(recordsOf(rows.results).map((record) => [record.id, record]));
  }

  /** The stored state of records (a write lost to another recomputes on it). Retried until `deadline`. */
  async current(ids: readonly number[], deadline: number): Promise<Map<number, RecordOut>> {
    const at = JSON.stringify(ids.map((id) => [id]));
    const rows = await this.untilDeadline(deadline, () => this.db.prepare(STATES).bind(at).all<RecordReadRow>());
    return new Map(recordsOf(rows.results).map((record) => [record.id, record]));
  }

  /**
   * The live record holding each claim's unique value, in the claims' order (undefined: none),
   * found and read in one statement, so a holder is read as it held the value. Retried until `deadline`.
   */
  async holding(claims: readonly UniqueClaim[], deadline: number): Promise<(RecordOut | undefined)[]> {
    if (claims.length === 0) return [];
    const at = JSON.stringify(claims.map((c) => [c.objectId, c.field, c.key]));
    const rows = await this.untilDeadline(deadline, () =>
      this.db.prepare(HOLDING).bind(at).all<RecordReadRow & { i: number }>(),
    );
    const records = recordsOf(rows.results);
    const held = new Map(rows.results.map((row, k) => [row.i, records[k] as RecordOut]));
    return claims.map((_, i) => held.get(i));
  }

  /**
   * The records a finished write answered, as it answered them, in its order: the current
   * state with every later change undone. One round trip. Undefined for a failure.
   */
  async answered(outcome: LedgerOutcome, deadline: number): Promise<RecordOut[] | undefined> {
    if ('c' in outcome) {
      const [first, count] = outcome.c;
      const [rows, left] = await this.untilDeadline(deadline, () =>
        this.db.batch<unknown>([
          this.db.prepare(CREATED).bind(first, first + count - 1),
          this.db.prepare(LEFT).bind(first),
        ]),
      );
      notLeft(left);
      return ((rows?.results ?? []) as { data: string }[]).map((row) => JSON.parse(row.data) as RecordOut);
    }
    if (!('r' in outcome)) return undefined;
    const at = JSON.stringify(outcome.r);
    const [records, changes, left] = await this.untilDeadline(deadline, () =>
      this.db.batch<unknown>([
        this.db.prepare(STATES).bind(at),
        this.db.prepare(UNDONE).bind(at),
        this.db.prepare(LEFT).bind(outcome.r[0]?.[0] ?? 0),
      ]),
    );
    notLeft(left);
    const current = new Map(
      recordsOf((records?.results ?? []) as RecordReadRow[]).map((record) => [record.id, record]),
    );
    const later = new Map<number, UndoneRow[]>();
    for (const row of (changes?.results ?? []) as UndoneRow[])
      later.set(row.record_id, [...(later.get(row.record_id) ?? []), row]);
    return outcome.r.map(([id, version]) => {
      let state = current.get(id);
      if (state === undefined) throw new Error(`record ${id} of a finished write is missing`);
      for (const row of later.get(id) ?? []) {
        if (row.version <= version) break;
        state = undo(state, {
          type: row.type,
          version: row.version,
          at: row.at,
          by: row.by,
          diff:
            row.was === null
              ? (JSON.parse(row.data) as Diff)
              : { ...(JSON.parse(row.data) as Diff), was: JSON.parse(row.was) as FieldValueOut[] },
        });
      }
      if (state.version !== version) throw new Error(`record ${id} cannot be rebuilt at version ${version}`);
      return state;
    });
  }

  /** One round trip, sent again after a transient failure until `deadline`, then OutcomeUnknown. */
  private untilDeadline<T>(deadline: number, call: () => Promise<T>): Promise<T> {
    return retrying(() => this.meter.d1(call), { deadline, clock: this.clock, late: () => new OutcomeUnknown() });
  }
}

interface UndoneRow {
  record_id: number;
  version: number;
  type: Exclude<ChangeType, 'created'>;
  at: number;
  by: number;
  data: string;
  was: string | null;
}

/** The parameters of a record's INSERT and of its CHANGE_OF_LAST, in their order. */
function insertTuples(r: NewRecord): { record: unknown[]; change: unknown[] } {
  const t = createdRecordTemplate(r);
  const keys = r.name === undefined ? fallbackKeys(r.objectName, r.fieldValues) : undefined;
  const named: RecordKeys | undefined = r.name === undefined ? undefined : recordKeys(r.name, r.fieldValues);
  return {
    record: [
      r.objectId,
      r.objectVersion,
      r.name ?? null,
      r.objectName,
      JSON.stringify(r.fieldValues),
      r.creationType,
      r.userId,
      r.now,
      r.isTemplate ? 1 : 0,
      named?.nameKey ?? null,
      keys?.words ?? '',
      named?.terms ?? keys?.terms ?? '[]',
      named?.folds ?? keys?.folds ?? '{}',
      keys?.nameFold ?? null,
      keys?.runs ?? '',
      keys?.whole ?? '',
    ],
    change: [r.now, r.userId, t.afterId, t.nameJson, t.namePrefix, t.afterName],
  };
}

/**
 * A finished write's records are not read from a database its tenant left (a try sent again through
 * a stale route, while the old rows are being removed): its outcome is unknown here, and a retry
 * with its Idempotency-Key reads it where the tenant is.
 */
function notLeft(left: D1Result<unknown> | undefined): void {
  if ((left?.results[0] as { gone: number } | undefined)?.gone === 1) throw outcomeUnknown();
}
