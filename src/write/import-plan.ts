import { foldCase } from '../core/fold.ts';
import type { InputProblem } from '../core/problem.ts';
import { recordAccess, type Caller } from '../domain/access.ts';
import { planCreate, type NewRecord } from '../domain/create.ts';
import type { ObjectDef } from '../domain/definition.ts';
import type { Row } from '../domain/import-file.ts';
import { inColumns, withoutFormulas, type ImportRow } from '../domain/import-rows.ts';
import { modeOf, type ImportState } from '../domain/imports.ts';
import { applyPatch, patchProblems } from '../domain/patch.ts';
import type { FieldValueOut, PatchIn, RecordOut } from '../schemas/record.ts';
import type { RecordWrites } from '../storage/writes.ts';
import { TURN_TIMEOUT_MS } from './deadlines.ts';

/**
 * What one chunk of an import writes, decided row by row with the create and patch rules every
 * write follows: a create makes a record of each row; an upsert patches the record holding the
 * row's unique value and creates the others; an update patches the record the row names by id.
 * The records a chunk patches are found and read in one round trip, and are written guarded by
 * the versions read (no turn in their objects): a chunk that lost a race to another writer is
 * planned again on what D1 holds then. A row that cannot be applied is listed with its problems,
 * each naming its CSV column beside its pointer.
 */

export interface ChunkPlan {
  /** Where the chunk ends when it stops before its last row (a record matched a second time). */
  to: number | undefined;
  processed: number;
  /** The rows' own field values go with each write: a refusal points into them. */
  creates: { number: number; record: NewRecord; fieldValues: FieldValueOut[] }[];
  updates: { number: number; base: RecordOut; record?: RecordOut; fieldValues: FieldValueOut[] }[];
  errors: { row: number; errors: InputProblem[] }[];
}

export interface ChunkInput {
  writes: RecordWrites;
  state: ImportState;
  caller: Caller;
  def: ObjectDef;
  rows: readonly Row[];
  /** Rows D1 refused in an earlier attempt of this chunk, with their problems. */
  refused: ReadonlyMap<number, InputProblem[]>;
  now: number;
}

/** A row that read well, and what it is matched on (an upsert's unique value, an update's id). */
interface GoodRow {
  number: number;
  row: ImportRow;
  key?: string | number;
}

export async function planChunk(input: ChunkInput): Promise<ChunkPlan> {
  const plan: ChunkPlan = { to: undefined, processed: input.rows.length, creates: [], updates: [], errors: [] };
  const good = goodRows(input, plan);
  const mode = modeOf(input.state);
  if (mode === 'create') for (const g of good) planCreateRow(input, plan, g);
  else {
    const matched = cutAtRepeat(input, plan, mode === 'upsert' ? upsertKeys(input, plan, good) : good);
    const bases = await matchedRecords(input, matched);
    matched.forEach((g, i) => {
      const base = bases[i];
      if (mode === 'update') planUpdateRow(input, plan, g, base);
      else if (base === undefined) planCreateRow(input, plan, g);
      else planPatchRow(input, plan, g, base, { fieldValues: g.row.fieldValues });
    });
  }
  plan.errors.sort((a, b) => a.row - b.row);
  return plan;
}

/** Lists a row as failed; its problems point into the row and name their column and value. */
function fail(
  input: ChunkInput,
  plan: ChunkPlan,
  number: number,
  problems: readonly InputProblem[],
  values: readonly FieldValueOut[] = [],
): void {
  const inRow = problems.map(({ status: _status, ...problem }) =>
    problem.pointer === undefined ? problem : { ...problem, pointer: problem.pointer.replace(/^\/0(?=\/|$)/, '') },
  );
  plan.errors.push({ row: number, errors: inColumns(inRow, values) });
}

/** The rows that read well; the others, and those D1 refused before, are listed as failed. */
function goodRows(input: ChunkInput, plan: ChunkPlan): GoodRow[] {
  return input.rows.flatMap((row) => {
    const refused = input.refused.get(row.number);
    if (refused !== undefined) plan.errors.push({ row: row.number, errors: refused });
    else if (!row.read.ok) plan.errors.push({ row: row.number, errors: row.read.problems });
    else
      return [
        {
          number: row.number,
          row: withoutFormulas(row.read.row, input.def),
          ...(row.read.row.id === undefined ? {} : { key: row.read.row.id }),
        },
      ];
    return [];
  });
}

function planCreateRow(input: ChunkInput, plan: ChunkPlan, { number, row }: GoodRow): void {
  const { def, caller, now } = input;
  const item = { objectId: def.id, fieldValues: row.fieldValues, ...(row.isTemplate ? { isTemplate: true } : {}) };
  const planned = planCreate(caller, [item], new Map([[def.id, def]]), now);
  if (!planned.ok) return fail(input, plan, number, planned.problems, row.fieldValues);
  const record = { ...(planned.value[0] as NewRecord), creationType: 'System' as const };
  plan.creates.push({ number, record, fieldValues: row.fieldValues });
}

/**
 * An upsert's rows with their matched value's key (as the unique index keeps it: text and email
 * folded). A row without the value is listed; one whose value is of another type than the field's
 * matches nothing and is created, so the create's check lists it.
 */
function upsertKeys(input: ChunkInput, plan: ChunkPlan, good: readonly GoodRow[]): GoodRow[] {
  const matchOn = input.state.match_on as string;
  const type = input.def.fields.find((f) => f.name === matchOn)?.type;
  return good.flatMap((g) => {
    const value = g.row.fieldValues.find((f) => f.fieldName === matchOn)?.value;
    if (value === undefined || value === null) {
      const required = {
        pointer: '/fieldValues',
        code: 'required',
        message: `${matchOn} is required to match a record`,
      };
      fail(input, plan, g.number, [required]);
      return [];
    }
    if (typeof value !== 'string' && typeof value !== 'number') {
      planCreateRow(input, plan, g);
      return [];
    }
    return [
      { ...g, key: typeof value === 'string' && (type === 'text' || type === 'email') ? foldCase(value) : value },
    ];
  });
}

/**
 * The matched rows up to the first that matches what an earlier row of the chunk matched: the
 * chunk ends before it, so the next chunk matches it on what the earlier row wrote.
 */
function cutAtRepeat(input: ChunkInput, plan: ChunkPlan, matched: readonly GoodRow[]): GoodRow[] {
  const seen = new Set<string>();
  const cut = matched.findIndex(({ key }) => {
    const twice = seen.has(JSON.stringify(key));
    seen.add(JSON.stringify(key));
    return twice;
  });
  if (cut < 0) return [...matched];
  const stop = (matched[cut] as GoodRow).number;
  const before = input.rows.filter((r) => r.number < stop);
  plan.to = before.at(-1)?.end ?? input.state.position;
  plan.processed = before.length;
  plan.errors = plan.errors.filter((e) => e.row < stop);
  plan.creates = plan.creates.filter((c) => c.number < stop);
  return matched.slice(0, cut);
}

/** The record each matched row patches (undefined: none), found and read in one round trip. */
async function matchedRecords(input: ChunkInput, matched: readonly GoodRow[]): Promise<(RecordOut | undefined)[]> {
  const deadline = Date.now() + TURN_TIMEOUT_MS;
  if (modeOf(input.state) === 'upsert') {
    const field = input.state.match_on as string;
    const claims = matched.map(({ key }) => ({
      pointer: '',
      objectId: input.def.id,
      field,
      key: key as string | number,
    }));
    return input.writes.holding(claims, deadline);
  }
  const ids = matched.map(({ key }) => key as number);
  const records = ids.length === 0 ? new Map<number, RecordOut>() : await input.writes.current(ids, deadline);
  return ids.map((id) => records.get(id));
}

/**
 * An update's row: the record it names must be one of the object shared with the import's
 * workspace (else it is no record to the importer), at the row's version when it gives one. Its
 * empty cells remove their fields' values, but a stored empty text stays (it was exported empty).
 */
function planUpdateRow(input: ChunkInput, plan: ChunkPlan, g: GoodRow, base: RecordOut | undefined): void {
  const { def, state } = input;
  if (base === undefined || base.objectId !== def.id || !base.sharedWorkspaceIds.includes(state.workspace_id)) {
    const missing = {
      pointer: '/id',
      code: 'not_found',
      message: 'no record of the object has this id in the workspace',
    };
    return fail(input, plan, g.number, [missing]);
  }
  if (g.row.version !== undefined && g.row.version !== base.version) {
    const message = `the record is at version ${base.version}, not ${g.row.version}: it changed since`;
    return fail(input, plan, g.number, [{ pointer: '/version', code: 'precondition_failed', message }]);
  }
  const stored = new Map(base.fieldValues.map((f) => [f.fieldName, f.value]));
  const removed = (g.row.blank ?? []).filter((name) => stored.get(name) !== '');
  const patch: PatchIn = {
    fieldValues: [...g.row.fieldValues, ...removed.map((fieldName) => ({ fieldName, value: null }))],
    ...(g.row.ownedBy === undefined ? {} : { ownedBy: g.row.ownedBy }),
  };
  planPatchRow(input, plan, g, base, patch, state.workspace_id);
}

/** A patch of a matched record, checked and merged as any patch (an update's rights: in the import's workspace). */
function planPatchRow(
  input: ChunkInput,
  plan: ChunkPlan,
  { number }: GoodRow,
  base: RecordOut,
  patch: PatchIn,
  workspaceId?: number,
): void {
  const { caller, def, now } = input;
  const fieldValues = patch.fieldValues ?? [];
  const access = recordAccess(caller, base, workspaceId);
  const problems = patchProblems(base, access, def, patch, '');
  if (problems.length > 0) return fail(input, plan, number, problems, fieldValues);
  const applied = applyPatch(base, def, patch, caller.userId, now, '');
  if (!applied.ok) return fail(input, plan, number, [applied.problem], fieldValues);
  plan.updates.push({ number, base, fieldValues, ...(applied.changed ? { record: applied.record } : {}) });
}
