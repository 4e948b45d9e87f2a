import type { Caller } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { csvChunk, ndjsonRows, type Row } from '../domain/import-file.ts';
import { inColumns } from '../domain/import-rows.ts';
import { allFailed, FAILING_START, modeOf, statusAfterChunk, type ColumnMap } from '../domain/imports.ts';
import { referenceClaims } from '../domain/references.ts';
import type { Env } from '../env.ts';
import type { InputProblem } from '../http/errors.ts';
import type { FieldValueOut, RecordOut } from '../schemas/record.ts';
import { Imports, isChunkMoved, type ChunkDone, type ImportState } from '../storage/imports.ts';
import { Meter } from '../storage/meter.ts';
import { databaseFor } from '../tenancy/routes.ts';
import { tenantOfId } from '../domain/tenant.ts';
import { claimsOf, isUniqueViolation, uniqueClashes } from '../storage/record-index.ts';
import { isInvalidReference, referenceProblems } from '../storage/references.ts';
import { AGAIN } from '../storage/retry.ts';
import { RecordWrites } from '../storage/writes.ts';
import { runAttempts } from './engine.ts';
import { planChunk, type ChunkPlan } from './import-plan.ts';

/**
 * One chunk of an import: the rows after the import's position, read from its file in R2,
 * planned row by row (import-plan.ts) and written in one D1 transaction with the import's new
 * position, counts and status. A chunk that D1 finds applied already (its reply was lost, the
 * object restarted) or cancelled changes nothing: the position guard aborts it. Rows D1 refuses
 * (a unique value held, a reference the importer may not make) are found, listed as failed, and
 * the chunk is written without them; a chunk that lost a race to another writer is planned again.
 */

/** Rows a chunk takes at most: three statements write them all (D1 takes 1,000 an invocation). */
export const CHUNK_ROWS = 100;
/**
 * Bytes of the file a chunk reads first (a chunk of typical rows is far less); a chunk that finds
 * no whole row in it reads four times as much, up to MAX_READ_BYTES: a row longer fails the import.
 */
const READ_BYTES = 256 * 1024;
const MAX_READ_BYTES = 16 * 1024 * 1024;
/** Times a chunk is computed again after D1 refused some of its rows or lost a race. */
const ATTEMPTS = 8;
/** How long a chunk's attempts may take before its alarm runs it again. */
const CHUNK_DEADLINE_MS = 30_000;

/** What a chunk did: whether more remain, and the workspace whose records it wrote. */
export interface ChunkStep {
  more: boolean;
  workspaceId?: number;
}

/** Runs one chunk of import `id`. */
export async function importChunk(env: Env, id: number, now: () => number = Date.now): Promise<ChunkStep> {
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
  const refusal = importerRefusal(state, caller, def);
  const rows = refusal ?? (await readRows(env, state, def as ObjectDef, rowsToRead(state)));
  if (typeof rows === 'string') {
    await imports.fail(id, state.position, now(), refusal ?? `Row ${state.processed + 1}: ${rows}.`);
    await dropFile(env, state.file);
    return { more: false };
  }
  const input = { writes: new RecordWrites(db, meter), state, caller: caller as Caller, def: def as ObjectDef };
  return applyChunk(env, db, imports, input, rows, now);
}

/** Why the importer may no longer import into the workspace, if so. */
function importerRefusal(state: ImportState, caller?: Caller, def?: ObjectDef): string | undefined {
  if (def === undefined || !def.workspaceIds.includes(state.workspace_id))
    return 'The object is no longer shared with the workspace.';
  if (caller?.roles.get(state.workspace_id) !== 'editor')
    return 'The importer is no longer an editor of the workspace.';
  return undefined;
}

/** While every row so far failed, a chunk stops where the import would give up: the rest is not read. */
const rowsToRead = (state: ImportState): number =>
  state.failed === state.processed && state.processed < FAILING_START
    ? Math.min(CHUNK_ROWS, FAILING_START - state.processed)
    : CHUNK_ROWS;

/** An import's file once it is finished: best effort (a file left behind costs storage, not correctness). */
export async function dropFile(env: Env, file: string): Promise<void> {
  await env.IMPORT_FILES.delete(file).catch((error: unknown) =>
    console.error(JSON.stringify({ message: 'import file not deleted', file, error: String(error) })),
  );
}

interface RowsRead {
  rows: Row[];
  to: number;
  atEnd: boolean;
}

/** The rows after the import's position, at most `max`; a string when the file cannot be read as its format. */
async function readRows(env: Env, state: ImportState, def: ObjectDef, max: number): Promise<RowsRead | string> {
  // Nothing after the position (a CSV file of its header alone): the import is done.
  if (state.position >= state.size) return { rows: [], to: state.position, atEnd: true };
  const mode = modeOf(state);
  for (let length = READ_BYTES; length <= MAX_READ_BYTES; length *= 4) {
    const object = await env.IMPORT_FILES.get(state.file, { range: { offset: state.position, length } });
    if (object === null) return 'the file is no longer kept';
    const bytes = new Uint8Array(await object.arrayBuffer());
    const atEnd = state.position + bytes.length >= state.size;
    const read =
      state.format === 'ndjson'
        ? ndjsonRows(bytes, atEnd, max, state, mode, (JSON.parse(state.columns ?? 'null') ?? undefined) as ColumnMap)
        : csvChunk(bytes, atEnd, max, state, def, JSON.parse(state.columns ?? '[]') as (string | null)[], mode);
    if (read.to > state.position || atEnd) return { ...read, atEnd: atEnd && read.to >= state.size };
  }
  return `a row is longer than ${MAX_READ_BYTES} bytes`;
}

type PlanInput = Omit<Parameters<typeof planChunk>[0], 'rows' | 'refused' | 'now'>;

/** Plans and writes the chunk, again on what D1 holds whenever it lost a race or D1 refused rows. */
function applyChunk(
  env: Env,
  db: D1Database,
  imports: Imports,
  input: PlanInput,
  read: RowsRead,
  now: () => number,
): Promise<ChunkStep> {
  const { state, writes } = input;
  const refused = new Map<number, InputProblem[]>();
  let attempt = 0;
  type Planned = { plan: ChunkPlan; done: ChunkDone };
  return runAttempts<Planned, ChunkStep>(
    writes,
    {
      decide: async () => {
        if (++attempt > ATTEMPTS) throw new Error('an import chunk kept losing races');
        const plan = await planChunk({ ...input, rows: read.rows, refused, now: now() });
        return { plan, done: await chunkDone(imports, state, plan, read, now()) };
      },
      commit: {
        statements: ({ plan, done }) => [
          ...imports.chunk(state.id, done),
          ...writes.insertsPacked(plan.creates.map((c) => c.record)),
          ...(plan.updates.length === 0
            ? []
            : writes.batchWrites(
                plan.updates.map(({ base, record }) => (record === undefined ? { base } : { base, record })),
                plan.updates.flatMap(({ base, record }) =>
                  record === undefined ? [] : [{ type: 'updated' as const, prev: base, next: record }],
                ),
              )),
        ],
        committed: ({ done }) => ({ more: done.status === 'running', workspaceId: state.workspace_id }),
        lost: async () => {
          if (attempt >= ATTEMPTS) throw new Error('an import chunk kept losing races');
        },
        refused: async ({ plan }, error) => {
          // Applied already (its reply was lost, the object restarted) or cancelled: nothing changed.
          if (isChunkMoved(error)) return { more: true };
          if (attempt >= ATTEMPTS) return undefined;
          // An upsert's value taken by another writer meanwhile: match again before listing rows as failed.
          if (modeOf(state) === 'upsert' && isUniqueViolation(error) && attempt < ATTEMPTS / 2) return AGAIN;
          const found = await refusedRows(db, input, plan, error);
          if (found === undefined) return undefined;
          for (const [number, problems] of found) refused.set(number, problems);
          return AGAIN;
        },
      },
    },
    Date.now() + CHUNK_DEADLINE_MS,
  ).then(async (step) => {
    if (!step.more && step.workspaceId !== undefined) await dropFile(env, state.file);
    return step;
  });
}

/**
 * The chunk's effect on its import: the position it moves to, its counts and where the import
 * then stands. An import that ends with every row failed says why: the problem most rows had,
 * read with the rows skipped before (at most FAILING_START of them).
 */
async function chunkDone(
  imports: Imports,
  state: ImportState,
  plan: ChunkPlan,
  read: RowsRead,
  now: number,
): Promise<ChunkDone> {
  const atEnd = plan.to === undefined && read.atEnd;
  const counts = { processed: state.processed + plan.processed, failed: state.failed + plan.errors.length };
  const status = statusAfterChunk(counts, atEnd);
  const earlier =
    status === 'failed' && state.failed > 0
      ? (await imports.errors(state.id, 0, FAILING_START)).map((e) => ({
          errors: JSON.parse(e.errors) as InputProblem[],
        }))
      : [];
  return {
    from: state.position,
    to: plan.to ?? read.to,
    processed: plan.processed,
    created: plan.creates.length,
    updated: plan.updates.filter((u) => u.record !== undefined).length,
    unchanged: plan.updates.filter((u) => u.record === undefined).length,
    failed: plan.errors.length,
    errors: plan.errors,
    status,
    ...(status === 'failed' ? { failure: allFailed([...earlier, ...plan.errors], atEnd) } : {}),
    now,
  };
}

/**
 * The rows D1 refused a chunk for, with their problems: unique values held (by another record or
 * an earlier row) and references the importer may not make. Undefined: not a refusal of rows.
 */
async function refusedRows(
  db: D1Database,
  { caller, def }: PlanInput,
  plan: ChunkPlan,
  error: unknown,
): Promise<Map<number, InputProblem[]> | undefined> {
  type Written = { number: number; fieldValues: FieldValueOut[]; base: RecordOut['fieldValues']; id?: number };
  const written: Written[] = [
    ...plan.creates.map((c) => ({ number: c.number, fieldValues: c.fieldValues, base: [] })),
    ...plan.updates.flatMap((u) =>
      u.record === undefined
        ? []
        : [{ number: u.number, fieldValues: u.fieldValues, base: u.base.fieldValues, id: u.base.id }],
    ),
  ];
  const refused = new Map<number, InputProblem[]>();
  const add = (pointer: string | undefined, { status: _status, ...problem }: InputProblem): void => {
    const w = written.find((x) => x.number === Number(pointer?.split('/')[1]));
    if (w === undefined) return;
    const inRow = [{ ...problem, pointer: pointer?.replace(/^\/\d+/, '') ?? '' }];
    refused.set(w.number, [...(refused.get(w.number) ?? []), ...inColumns(inRow, w.fieldValues)]);
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
