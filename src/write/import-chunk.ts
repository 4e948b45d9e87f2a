import type { Caller } from '../domain/access.ts';
import { recordAccess } from '../domain/access.ts';
import { planCreate, type NewRecord } from '../domain/create.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { csvChunk, ndjsonRows, type Row } from '../domain/import-file.ts';
import { applyPatch, patchProblems } from '../domain/patch.ts';
import { referenceClaims } from '../domain/references.ts';
import type { Env } from '../env.ts';
import type { InputProblem } from '../http/errors.ts';
import type { RecordOut } from '../schemas/record.ts';
import { Imports, isChunkMoved, type ChunkDone, type ImportState } from '../storage/imports.ts';
import { Meter } from '../storage/meter.ts';
import { databaseFor } from '../storage/routes.ts';
import { tenantOfId } from '../domain/tenant.ts';
import { claimsOf, isUniqueViolation, uniqueClashes, uniqueHolders } from '../storage/record-index.ts';
import { foldCase } from '../core/fold.ts';
import { isInvalidReference, referenceProblems } from '../storage/references.ts';
import { AGAIN, recomputing } from '../storage/retry.ts';
import { RecordWrites, VersionConflict } from '../storage/writes.ts';
import { TURN_TIMEOUT_MS } from './deadlines.ts';

/**
 * One chunk of an import: the rows after the import's position, read from its file in R2, checked
 * one by one and written in one D1 transaction with the import's new position and counts. A chunk
 * that D1 finds applied already (its reply was lost, the object restarted) or cancelled changes
 * nothing: the position guard aborts it. Rows D1 refuses (a unique value held, a reference the
 * importer may not make) are found, listed as failed, and the chunk is written without them.
 */

/** Rows a chunk creates at most (three statements each: D1 takes 1,000 per invocation). */
export const CREATE_ROWS = 100;
/** Rows a chunk of an upsert takes at most: each matched record takes its turn in its object. */
export const UPSERT_ROWS = 20;
/**
 * Bytes of the file a chunk reads first (a chunk of typical rows is far less); a chunk that finds
 * no whole row in it reads four times as much, up to MAX_READ_BYTES: a row longer fails the import.
 */
const READ_BYTES = 256 * 1024;
const MAX_READ_BYTES = 16 * 1024 * 1024;
/** Times a chunk is computed again after D1 refused some of its rows or lost a race. */
const ATTEMPTS = 8;

/** Runs one chunk of import `id`: whether more remain, and the workspace whose records it wrote. */
export async function importChunk(
  env: Env,
  id: number,
  now: () => number = Date.now,
): Promise<{ more: boolean; workspaceId?: number }> {
  const meter = new Meter();
  const db = await databaseFor(env, tenantOfId(id));
  if (db === undefined) return { more: false };
  const imports = new Imports(db, meter);
  const { state, caller, def } = await imports.context(id);
  if (state === undefined) return { more: false };
  if (state.status !== 'queued' && state.status !== 'running') {
    // Finished (a cancel, or a chunk whose reply was lost): its file is no longer needed.
    await dropFile(env, state.file);
    return { more: false };
  }
  if (
    caller?.roles.get(state.workspace_id) !== 'editor' ||
    def === undefined ||
    !def.workspaceIds.includes(state.workspace_id)
  ) {
    const why =
      def === undefined || !def.workspaceIds.includes(state.workspace_id)
        ? 'The object is no longer shared with the workspace.'
        : 'The importer is no longer an editor of the workspace.';
    await imports.fail(id, state.position, now(), why);
    await dropFile(env, state.file);
    return { more: false };
  }
  const rows = await readRows(env, state, def, state.mode === 'upsert' ? UPSERT_ROWS : CREATE_ROWS);
  if (typeof rows === 'string') {
    await imports.fail(id, state.position, now(), `Row ${state.processed + 1}: ${rows}.`);
    await dropFile(env, state.file);
    return { more: false };
  }
  const writes = new RecordWrites(db, meter);
  const failed = new Map<number, InputProblem[]>();
  return recomputing(async (attempt) => {
    if (attempt > ATTEMPTS) throw new Error('an import chunk kept losing races');
    const plan = await planChunk(db, writes, state, caller, def, rows.rows, failed, now());
    if (plan.stale === true) return AGAIN;
    const done: ChunkDone = {
      from: state.position,
      to: plan.to ?? rows.to,
      processed: plan.processed,
      created: plan.creates.length,
      updated: plan.updates.filter((u) => u.record !== undefined).length,
      unchanged: plan.updates.filter((u) => u.record === undefined).length,
      failed: plan.errors.length,
      errors: plan.errors,
      last: plan.to === undefined && rows.atEnd,
      now: now(),
    };
    const statements = [
      ...imports.chunk(id, done),
      ...writes.insertsPacked(plan.creates.map((c) => c.record)),
      ...(plan.updates.length === 0
        ? []
        : writes.batchWrites(
            plan.updates.map(({ base, record }) => (record === undefined ? { base } : { base, record })),
            plan.updates.flatMap(({ base, record }) =>
              record === undefined ? [] : [{ type: 'updated' as const, prev: base, next: record }],
            ),
          )),
    ];
    try {
      await meter.d1(() => db.batch(statements));
      if (done.last) await dropFile(env, state.file);
      return { more: !done.last, workspaceId: state.workspace_id };
    } catch (error) {
      if (isChunkMoved(error)) return { more: true };
      if (attempt >= ATTEMPTS) throw error;
      if (error instanceof Error && error.message.includes('version_conflict')) return AGAIN;
      if (error instanceof VersionConflict) return AGAIN;
      // An upsert's value taken by another writer meanwhile: match again before listing rows as failed.
      if (state.mode === 'upsert' && isUniqueViolation(error) && attempt < ATTEMPTS / 2) return AGAIN;
      const refused = await refusedRows(db, caller, def, plan, error);
      if (refused === undefined) throw error;
      for (const [number, problems] of refused) failed.set(number, problems);
      return AGAIN;
    }
  });
}

/** An import's file once it is finished: best effort (a file left behind costs storage, not correctness). */
export async function dropFile(env: Env, file: string): Promise<void> {
  await env.IMPORT_FILES.delete(file).catch((error: unknown) =>
    console.error(JSON.stringify({ message: 'import file not deleted', file, error: String(error) })),
  );
}

/** The rows after the import's position, at most `max`; undefined when the file cannot be read as its format. */
async function readRows(
  env: Env,
  state: ImportState,
  def: ObjectDef,
  max: number,
): Promise<{ rows: Row[]; to: number; atEnd: boolean } | string> {
  // Nothing after the position (a CSV file of its header alone): the import is done.
  if (state.position >= state.size) return { rows: [], to: state.position, atEnd: true };
  for (let length = READ_BYTES; length <= MAX_READ_BYTES; length *= 4) {
    const object = await env.IMPORT_FILES.get(state.file, { range: { offset: state.position, length } });
    if (object === null) return 'the file is no longer kept';
    const bytes = new Uint8Array(await object.arrayBuffer());
    const atEnd = state.position + bytes.length >= state.size;
    const read =
      state.format === 'ndjson'
        ? ndjsonRows(bytes, atEnd, max, state)
        : csvChunk(bytes, atEnd, max, state, def, JSON.parse(state.columns ?? '[]') as string[]);
    if (read.to > state.position || atEnd) return { ...read, atEnd: atEnd && read.to >= state.size };
  }
  return `a row is longer than ${MAX_READ_BYTES} bytes`;
}

interface ChunkPlan {
  /** A record matched by an upsert no longer holds the value: plan the chunk again. */
  stale?: boolean;
  /** Where the chunk ends when it stops before its last row (an upsert meeting a value twice). */
  to: number | undefined;
  processed: number;
  creates: { number: number; record: NewRecord }[];
  updates: { number: number; base: RecordOut; record?: RecordOut }[];
  errors: { row: number; errors: InputProblem[] }[];
}

/** Strips a one-element batch's `/0` from a problem's pointer: a row's problems point into the row. */
const inRow = ({ status: _status, ...problem }: InputProblem): InputProblem =>
  problem.pointer === undefined ? problem : { ...problem, pointer: problem.pointer.replace(/^\/0(?=\/|$)/, '') };

async function planChunk(
  db: D1Database,
  writes: RecordWrites,
  state: ImportState,
  caller: Caller,
  def: ObjectDef,
  rows: readonly Row[],
  failed: ReadonlyMap<number, InputProblem[]>,
  now: number,
): Promise<ChunkPlan> {
  const plan: ChunkPlan = { to: undefined, processed: 0, creates: [], updates: [], errors: [] };
  const objects = new Map([[def.id, def]]);
  const create = (row: Row, fieldValues: RecordOut['fieldValues'], isTemplate?: boolean): void => {
    const planned = planCreate(
      caller,
      [{ objectId: def.id, fieldValues, ...(isTemplate ? { isTemplate } : {}) }],
      objects,
      now,
    );
    if (planned.ok)
      plan.creates.push({ number: row.number, record: { ...(planned.value[0] as NewRecord), creationType: 'System' } });
    else plan.errors.push({ row: row.number, errors: planned.problems.map(inRow) });
  };
  const good: { row: Row; fieldValues: RecordOut['fieldValues']; isTemplate?: boolean }[] = [];
  for (const row of rows) {
    const known = failed.get(row.number);
    if (known !== undefined) plan.errors.push({ row: row.number, errors: known });
    else if (!row.read.ok) plan.errors.push({ row: row.number, errors: row.read.problems });
    else
      good.push({
        row,
        fieldValues: row.read.row.fieldValues,
        ...(row.read.row.isTemplate ? { isTemplate: true } : {}),
      });
  }
  plan.processed = rows.length;
  if (state.mode === 'create') {
    for (const g of good) create(g.row, g.fieldValues, g.isTemplate);
    return plan;
  }
  // Upsert: the record holding each row's matched value is patched, the others created. A value
  // met twice in one chunk ends the chunk before its second row (the next chunk sees the first).
  const matchOn = state.match_on as string;
  const field = def.fields.find((f) => f.name === matchOn);
  // A unique value's key as the index keeps it: text and email folded. Another type has none.
  const keyOf = (value: unknown): string | number | undefined =>
    typeof value === 'number'
      ? value
      : typeof value !== 'string'
        ? undefined
        : field?.type === 'text' || field?.type === 'email'
          ? foldCase(value)
          : value;
  const valueOf = (values: RecordOut['fieldValues']): unknown => values.find((f) => f.fieldName === matchOn)?.value;
  const matched: { g: (typeof good)[number]; key: string | number }[] = [];
  for (const g of good) {
    const value = valueOf(g.fieldValues);
    const key = keyOf(value);
    if (value === undefined || value === null)
      plan.errors.push({
        row: g.row.number,
        errors: [{ pointer: '/fieldValues', code: 'required', message: `${matchOn} is required to match a record` }],
      });
    // A value of the wrong type matches nothing: the create's check lists it.
    else if (key === undefined) create(g.row, g.fieldValues, g.isTemplate);
    else matched.push({ g, key });
  }
  const claims = matched.map(({ key }) => ({ pointer: '', objectId: def.id, field: matchOn, key }));
  const seen = new Set<string>();
  const cutAt = matched.findIndex(({ key }) => {
    const twice = seen.has(JSON.stringify(key));
    seen.add(JSON.stringify(key));
    return twice;
  });
  const taken = cutAt < 0 ? matched : matched.slice(0, cutAt);
  if (cutAt >= 0) {
    const stop = matched[cutAt]?.g.row.number as number;
    const last = rows.filter((r) => r.number < stop).at(-1);
    plan.to = last?.end ?? state.position;
    plan.processed = rows.filter((r) => r.number < stop).length;
    plan.errors = plan.errors.filter((e) => e.row < stop);
    plan.creates = plan.creates.filter((c) => c.number < stop);
  }
  const holders = await uniqueHolders(db, claims.slice(0, taken.length));
  const ids = [...new Set(holders.filter((h): h is number => h !== undefined))];
  const deadline = Date.now() + TURN_TIMEOUT_MS;
  const turns = ids.length === 0 ? new Map<number, RecordOut>() : await writes.current(ids, deadline);
  // A holder found before it was read may have let go of the value since (a patch, a delete): the
  // chunk is planned again on what D1 holds now, as a serial order would see it.
  if (
    taken.some(({ key }, i) => {
      const base = turns.get(holders[i] as number);
      return base !== undefined && (base.deleted || keyOf(valueOf(base.fieldValues)) !== key);
    })
  )
    return { ...plan, stale: true };
  taken.forEach(({ g }, i) => {
    const holder = holders[i];
    if (holder === undefined) return create(g.row, g.fieldValues, g.isTemplate);
    const base = turns.get(holder) as RecordOut;
    const patch = { fieldValues: g.fieldValues };
    const problems = patchProblems(base, recordAccess(caller, base.sharedWorkspaceIds), def, patch, '');
    if (problems.length > 0) return plan.errors.push({ row: g.row.number, errors: problems.map(inRow) });
    const applied = applyPatch(base, def, patch, caller.userId, now, '');
    if (!applied.ok) return plan.errors.push({ row: g.row.number, errors: [inRow(applied.problem)] });
    plan.updates.push({ number: g.row.number, base, ...(applied.changed ? { record: applied.record } : {}) });
  });
  plan.errors.sort((a, b) => a.row - b.row);
  return plan;
}

/**
 * The rows D1 refused a chunk for, with their problems: unique values held (by another record or
 * an earlier row) and references the importer may not make. Undefined: not a refusal of rows.
 */
async function refusedRows(
  db: D1Database,
  caller: Caller,
  def: ObjectDef,
  plan: ChunkPlan,
  error: unknown,
): Promise<Map<number, InputProblem[]> | undefined> {
  type Written = { number: number; fieldValues: RecordOut['fieldValues']; base: RecordOut['fieldValues']; id?: number };
  const written: Written[] = [
    ...plan.creates.map((c) => ({ number: c.number, fieldValues: c.record.fieldValues, base: [] })),
    ...plan.updates.flatMap((u) =>
      u.record === undefined
        ? []
        : [{ number: u.number, fieldValues: u.record.fieldValues, base: u.base.fieldValues, id: u.base.id }],
    ),
  ];
  const refused = new Map<number, InputProblem[]>();
  const add = (pointer: string | undefined, problem: InputProblem): void => {
    const number = Number(pointer?.split('/')[1]);
    if (Number.isSafeInteger(number))
      refused.set(number, [
        ...(refused.get(number) ?? []),
        inRow({ ...problem, pointer: pointer?.replace(/^\/\d+/, '') ?? '' }),
      ]);
  };
  if (isUniqueViolation(error)) {
    const claims = claimsOf(
      written.map((w) => ({
        objectId: def.id,
        fieldValues: w.fieldValues,
        ...(w.id === undefined ? {} : { id: w.id }),
      })),
      () => def.fields,
      (i, name) =>
        `/${written[i]?.number}/fieldValues/${written[i]?.fieldValues.findIndex((f) => f.fieldName === name)}`,
    );
    for (const clash of await uniqueClashes(db, claims)) add(clash.pointer, clash);
  } else if (isInvalidReference(error)) {
    const claims = written.flatMap((w) => referenceClaims(def, w.fieldValues, w.base, `/${w.number}`));
    for (const problem of await referenceProblems(db, claims, caller.userId, '')) add(problem.pointer, problem);
  } else return undefined;
  return refused.size > 0 ? refused : undefined;
}
