/// <reference types="node" />
import { LEASE_MS } from '../../src/storage/idempotency.ts';
import { CALL_DEADLINE_MS } from '../../src/write/deadlines.ts';
import { RECORD_COLUMNS, recordsOf, type RecordReadRow } from '../../src/storage/store.ts';
import { recordKeys } from '../../src/domain/record-keys.ts';
import { byName, foldItem } from '../feed-fold.ts';
import { ADMIN_TOKEN, Cluster, NO_FAULTS, type Faults, type Injected } from './cluster.ts';
import {
  codeKey,
  equals,
  FIELDS,
  generateFile,
  generateUpdateFile,
  holds,
  rowKey,
  type FileRow,
  type ImportFile,
  type Values,
} from './import-file.ts';
import { ImportObjects, type ImportInjected } from './import-objects.ts';
import { installWorkerdStreams, MemoryBucket } from './r2.ts';
import { SqliteD1 } from './sqlite-d1.ts';
import { World } from './world.ts';
import { client, migrations, resetIsolate, sameState, type Answer } from './harness.ts';

/**
 * One simulated import: an editor posts a file of a few hundred rows through the production
 * route; the import's object (the production ImportObject, hosted by import-objects.ts) applies
 * it chunk by chunk on its alarms, while D1 fails calls and loses replies after they committed,
 * instances reset mid-chunk (right after a chunk's batch, or at any reply), twins run chunks of
 * the same import side by side, and the Cron Trigger starts what was lost. Meanwhile another
 * editor patches, upserts, deletes and restores records of the same object through the Worker,
 * racing the import on its codes and on the records it matches; sometimes the importer cancels.
 * One run in three imports an update by id of the records made before it (`mode=update`).
 * Then, with the faults off, every row's outcome is read back from what the service holds.
 * Every shape that once met a fault of the service is drawn (see import-file.ts and the clients
 * below).
 */

export interface ImportReport {
  seed: number;
  mode: string;
  format: string;
  rows: number;
  bytes: number;
  status: string;
  counts: Record<string, number>;
  /** Good rows of an upsert refused for a race, by problem (a code taken, a matched record deleted meanwhile). */
  raced: Record<string, number>;
  clientOps: number;
  cronRuns: number;
  virtualMs: number;
  injected: Injected & ImportInjected & { r2Failed: number; chunksMoved: number };
  violations: string[];
}

interface Setup {
  d1: SqliteD1;
  importer: { id: number; key: string };
  editor: { id: number; key: string };
  workspace: number;
  objectId: number;
}

/** One client operation: its key, what it sent, the tokens (titles) it writes, and its answers. */
interface Operation {
  key: string;
  kind: string;
  method: string;
  path: string;
  body: unknown;
  tokens: string[];
  answers: Answer[];
}

const WORKSPACE = 1;
const CRON_MS = 60_000;
let prepared: Setup | undefined;

/** Made once per process, then each run works inside a transaction rolled back after it. */
async function setup(): Promise<Setup> {
  if (prepared !== undefined) return prepared;
  const world = new World(0);
  const d1 = SqliteD1.migrated(migrations());
  world.install();
  try {
    resetIsolate(WORKSPACE);
    const http = client(world, new Cluster(world, d1, NO_FAULTS));
    const admin = async (method: string, path: string, body?: unknown) => {
      const answer = await http.json(method, path, ADMIN_TOKEN, body);
      if (answer.status >= 300) throw new Error(`setup: ${method} ${path} answered ${answer.status} ${answer.text}`);
      return answer.body as Record<string, any>;
    };
    const workspace = await admin('POST', '/admin/workspaces', { name: 'imports' });
    const user = async (name: string) => {
      const made = await admin('POST', '/admin/users', { name });
      const { key } = await admin('POST', `/admin/users/${made.id}/keys`);
      await admin('PUT', `/admin/workspaces/${workspace.id}/members/${made.id}`, { role: 'editor' });
      return { id: made.id as number, key: key as string };
    };
    const importer = await user('importer');
    const editor = await user('editor');
    const object = await admin('POST', '/admin/objects', {
      name: 'Item',
      workspaceIds: [workspace.id],
      nameTemplate: '{title}',
      fields: FIELDS,
    });
    if (workspace.id !== WORKSPACE) throw new Error(`setup: the workspace is ${workspace.id}, not ${WORKSPACE}`);
    prepared = { d1, importer, editor, workspace: workspace.id, objectId: object.id };
    return prepared;
  } finally {
    world.uninstall();
  }
}

/** Each run draws how hostile its network is: from calm to about 1 call in 4 failing or losing its reply. */
function faultsOf(world: World): Faults {
  const calm = world.chance(0.1);
  return {
    fail: calm ? 0 : world.random() * 0.1,
    lose: calm ? 0 : world.random() * 0.15,
    restart: calm ? 0 : world.random() * 0.25,
    crash: calm ? 0 : world.random() * 0.04,
    slow: calm ? 0 : world.random() * 0.01,
    twin: world.chance(0.5) ? world.random() * 0.3 : 0,
  };
}

const final = (answer: Answer): boolean => answer.status < 500 && !(answer.status === 409 && answer.retryAfter);

export async function simulateImport(seed: number): Promise<ImportReport> {
  const base = await setup();
  return base.d1.isolated(() => run(seed, base));
}

async function run(seed: number, base: Setup): Promise<ImportReport> {
  const world = new World(seed);
  const faults = faultsOf(world);
  const bucket = new MemoryBucket(world, () => (cluster.faults === NO_FAULTS ? 0 : cluster.faults.fail));
  const objects = new ImportObjects(world, () => cluster);
  const cluster: Cluster = new Cluster(world, base.d1, NO_FAULTS, {
    IMPORTS: objects.binding(),
    IMPORT_FILES: bucket.binding(),
  });
  const db = base.d1.db;
  const violations: string[] = [];
  const bugs = new Set(['bom', 'match', 'twice', 'recode']);
  const drawn = generateFile(world, { bugs });
  // One run in three updates by id the records made before it (its file is drawn once they exist).
  const updating = world.chance(1 / 3);
  const trace = (line: string) => {
    if (process.env.SIM_TRACE) console.log(`${Math.round(world.now)} ${line}`);
  };
  world.install();
  const uninstallStreams = installWorkerdStreams();
  try {
    resetIsolate(WORKSPACE);
    const http = client(world, cluster);
    const { workspace, objectId, importer, editor } = base;

    // Before the import, without faults: records that rows will match (or, in a create, clash
    // with; an update names them), some deleted (a restore races the import for their code), and
    // records that hold a row's values exactly (that row leaves them unchanged, unless a client
    // changed them first).
    const codes = [...drawn.codes];
    const taken = new Set<string>();
    const pre: Values[] = [];
    for (let i = updating ? world.between(10, 30) : world.between(3, 10); i > 0; i--) {
      const code = world.pick(codes);
      if (taken.has(codeKey(code) as string)) continue;
      taken.add(codeKey(code) as string);
      pre.push({ title: `pre ${code}`, code, flag: true });
    }
    if (drawn.mode === 'upsert' && !updating)
      for (const row of drawn.rows.filter(() => world.chance(0.04))) {
        const key = rowKey(row.values);
        if (row.values === undefined || key === undefined || taken.has(key)) continue;
        taken.add(key);
        pre.push({ ...row.values });
      }
    const preIds: number[] = [];
    for (let i = 0; i < pre.length; i += 20) {
      const made = await http.json(
        'POST',
        '/records/batch',
        editor.key,
        pre.slice(i, i + 20).map((values) => ({
          objectId,
          fieldValues: Object.entries(values).map(([fieldName, value]) => ({ fieldName, value })),
        })),
      );
      if (made.status !== 201) throw new Error(`run setup: create answered ${made.status} ${made.text}`);
      preIds.push(...(made.body as { record: { id: number } }[]).map((item) => item.record.id));
    }
    for (const id of preIds.filter(() => world.chance(0.15))) {
      const gone = await http.json('DELETE', `/workspaces/${workspace}/records/${id}`, editor.key);
      if (gone.status !== 200) throw new Error(`run setup: delete answered ${gone.status} ${gone.text}`);
    }
    const file = updating ? generateUpdateFile(world, preIds) : drawn;
    const startedAt = world.now;
    cluster.faults = faults;

    // The importer: posts the file under a key until it is accepted, and sometimes cancels.
    const importPath =
      `/workspaces/${workspace}/imports?objectId=${objectId}` +
      (file.mode === 'upsert' ? '&mode=upsert&matchOn=code' : file.mode === 'update' ? '&mode=update&matchOn=id' : '');
    const importHeaders = {
      'Content-Type': file.contentType,
      'Content-Length': String(file.bytes.byteLength),
      'Idempotency-Key': 'import-once',
    };
    const posted: Answer[] = [];
    const cancels: Answer[] = [];
    let importerDone = false;
    const post = async (): Promise<void> => {
      for (let a = 0; a < 10; a++) {
        const answer = await http.send('POST', importPath, importer.key, file.bytes, importHeaders);
        trace(`import POST -> ${answer.status} ${answer.text.slice(0, 200)}`);
        posted.push(answer);
        if (final(answer)) break;
        await world.sleep(world.between(10, 100) * (a + 1));
      }
    };
    const cancel = async (id: number): Promise<void> => {
      for (let a = 0; a < 10; a++) {
        const answer = await http.send('DELETE', `/imports/${id}`, importer.key);
        trace(`import DELETE -> ${answer.status} ${answer.text.slice(0, 200)}`);
        cancels.push(answer);
        if (final(answer)) break;
        await world.sleep(world.between(10, 100) * (a + 1));
      }
    };
    const willCancel = world.chance(0.15);
    const cancelAfter = world.between(0, 2_000);
    const importing = (async () => {
      await world.sleep(world.between(0, 20));
      await post();
      const accepted = posted.find((a) => a.status === 202);
      if (willCancel && accepted !== undefined) {
        await world.sleep(cancelAfter);
        await cancel(accepted.body.id as number);
      }
      importerDone = true;
    })();

    const unfinished = (): boolean =>
      (db.prepare(`SELECT count(*) AS n FROM imports WHERE status IN ('queued', 'running')`).get() as { n: number }).n >
      0;
    const importOver = (): boolean => importerDone && !unfinished();

    // The Cron Trigger: every minute while the import may still run.
    let cronRuns = 0;
    const cron = (async () => {
      await world.sleep(world.between(1, CRON_MS));
      while (!importOver() && world.now - startedAt < 6 * 3_600_000) {
        cronRuns++;
        await cluster.scheduled();
        await world.sleep(CRON_MS);
      }
    })();

    // The other editor's clients: writes to records of the same object while the import runs.
    const operations: Operation[] = [];
    const recordIds = (): number[] =>
      (db.prepare('SELECT id FROM records WHERE object_id = ? ORDER BY id').all(objectId) as { id: number }[]).map(
        (r) => r.id,
      );
    const clients = Array.from({ length: world.between(1, 3) }, async (_, c) => {
      const ops = world.between(3, 12);
      for (let o = 0; o < ops && !importOver(); o++) {
        await world.sleep(world.between(1, 150));
        const ids = recordIds();
        if (ids.length === 0) continue;
        const id = world.pick(ids);
        const token = (i = 0) => `Ét${c}.${o}.${i}`;
        const code = world.pick(codes);
        // A client that changes a record's code while the import matches on it (an import once
        // patched the record it had matched even after it let go of the code).
        const drawn = world.pick(['patch', 'patch', 'recode', 'batch', 'upsert', 'upsert', 'delete', 'restore']);
        const kind = drawn === 'recode' && !bugs.has('recode') ? 'patch' : drawn;
        const op: Operation = {
          key: `c${c}-${o}`,
          kind,
          method: 'PATCH',
          path: '',
          body: undefined,
          tokens: [],
          answers: [],
        };
        switch (kind) {
          case 'patch':
          case 'recode':
            op.path = `/workspaces/${workspace}/records/${id}`;
            op.body = {
              fieldValues: [
                { fieldName: 'title', value: token() },
                ...(kind === 'recode' ? [{ fieldName: 'code', value: code }] : []),
              ],
            };
            op.tokens = [token()];
            break;
          case 'batch': {
            const chosen = [...new Set([id, world.pick(ids), world.pick(ids)])];
            op.path = `/workspaces/${workspace}/records/batch`;
            op.body = chosen.map((recordId, i) => ({
              id: recordId,
              fieldValues: [{ fieldName: 'title', value: token(i) }],
            }));
            op.tokens = chosen.map((_, i) => token(i));
            break;
          }
          case 'upsert':
            op.method = 'POST';
            op.path = `/objects/${objectId}/records/upsert`;
            op.body = {
              matchOn: 'code',
              items: [
                {
                  fieldValues: [
                    { fieldName: 'code', value: code },
                    { fieldName: 'title', value: token() },
                  ],
                },
              ],
            };
            op.tokens = [token()];
            break;
          default:
            op.method = kind === 'delete' ? 'DELETE' : 'POST';
            op.path = `/workspaces/${workspace}/records/${id}${kind === 'restore' ? '/restore' : ''}`;
        }
        operations.push(op);
        for (let a = 0; a < 6; a++) {
          const answer = await http.send(op.method, op.path, editor.key, op.body, { 'Idempotency-Key': op.key });
          trace(`${op.key} ${kind} ${op.method} ${op.path} -> ${answer.status} ${answer.text.slice(0, 160)}`);
          op.answers.push(answer);
          if (final(answer)) break;
          await world.sleep(world.between(5, 50) * (a + 1));
        }
      }
    });
    let settled = 0;
    for (const work of [importing, cron, ...clients]) void work.then(() => settled++);
    await world.run(8 * 3_600_000);
    if (settled < clients.length + 2) violations.push(`${clients.length + 2 - settled} actors never finished`);
    const virtualMs = Math.round(world.now - startedAt);

    // The history, with the faults off: every client key sent once more for its final answer,
    // the import posted again if it never was answered, and run to its end if it has not ended.
    cluster.faults = NO_FAULTS;
    objects.calm = true;
    for (const op of operations) {
      let answer = await http.json(op.method, op.path, editor.key, op.body, { 'Idempotency-Key': op.key });
      if (answer.status === 409 && answer.retryAfter) {
        const waited = world.sleep(LEASE_MS + 1_000);
        await world.run();
        await waited;
        answer = await http.json(op.method, op.path, editor.key, op.body, { 'Idempotency-Key': op.key });
      }
      op.answers.push(answer);
      if (!final(answer)) violations.push(`${op.key}: no final answer without faults: ${answer.status} ${answer.text}`);
    }
    const again = await http.json('POST', importPath, importer.key, file.bytes, importHeaders);
    posted.push(again);
    if (again.status !== 202) {
      violations.push(`the import posted again answered ${again.status} ${again.text.slice(0, 200)}`);
      return report();
    }
    const importId = again.body.id as number;
    for (const answer of posted)
      if (answer.status === 202 && answer.body.id !== importId)
        violations.push(`the import's key answered import ${answer.body.id}, then ${importId}`);
      else if (final(answer) && answer.status !== 202)
        violations.push(`the import was answered ${answer.status} ${answer.text.slice(0, 200)}`);
    for (let i = 0; i < 3 && unfinished(); i++) {
      const waited = world.sleep(CRON_MS);
      await world.run();
      await waited;
      await cluster.scheduled();
      await world.run();
    }
    if (unfinished()) violations.push(`import ${importId} never finished without faults`);
    // A cancel never answered is sent once more: it answers what it did (or that the import ended).
    if (cancels.length > 0 && !cancels.some(final))
      cancels.push(await http.json('DELETE', `/imports/${importId}`, importer.key));

    // What the service holds.
    const state = db.prepare('SELECT * FROM imports WHERE id = ?').get(importId) as Record<string, any>;
    const shown = await http.json('GET', `/imports/${importId}`, importer.key);
    if (
      shown.status !== 200 ||
      JSON.stringify(shown.body.rows) !== JSON.stringify(countsOf(state)) ||
      shown.body.status !== state.status
    )
      violations.push(
        `GET /imports/${importId} answered ${shown.status} ${shown.text}, D1 holds ${JSON.stringify(state)}`,
      );
    const errors = db
      .prepare('SELECT row, errors FROM import_errors WHERE import_id = ? ORDER BY row')
      .all(importId) as { row: number; errors: string }[];
    const listed = await http.json('GET', `/imports/${importId}/errors`, importer.key);
    const lines = errors.map((e) => `{"row":${e.row},"errors":${e.errors}}\n`).join('');
    if (listed.status !== 200 || listed.text !== lines)
      violations.push(
        `GET /imports/${importId}/errors answered ${listed.status}, not the ${errors.length} rows D1 holds`,
      );
    const feed: any[] = [];
    for (let after: string | undefined; ;) {
      const page = await http.json(
        'GET',
        `/workspaces/${workspace}/changes?limit=100${after ? `&after=${after}` : ''}`,
        editor.key,
      );
      if (page.status !== 200) throw new Error(`the feed answered ${page.status} ${page.text}`);
      const { items, nextCursor } = page.body as { items: any[]; nextCursor: string };
      feed.push(...items);
      if (items.length === 0) break;
      after = nextCursor;
    }
    const stored = recordsOf(
      db.prepare(`SELECT ${RECORD_COLUMNS} FROM records r ORDER BY r.id`).all() as unknown as RecordReadRow[],
    );

    // A replay's aid: SIM_DEBUG_RECORD=<id> prints the file's bad rows and that record's feed.
    if (process.env.SIM_DEBUG_RECORD) {
      console.log(JSON.stringify(file.rows.filter((r) => r.bad !== undefined).map((r) => [r.number, r.bad])));
      for (const item of feed)
        if (item.recordId === Number(process.env.SIM_DEBUG_RECORD)) console.log(JSON.stringify(item));
    }
    const raced = checkImport(violations, file, state, errors, feed, importer.id, cancels);
    violations.push(...checkHistory(feed, stored, operations));
    violations.push(...checkStored(db, objectId, importer.id, state, stored));
    return report(raced);

    function report(raced: Record<string, number> = {}): ImportReport {
      const ended = db.prepare('SELECT * FROM imports').get() as Record<string, any> | undefined;
      return {
        seed,
        mode: file.mode,
        format: file.format,
        rows: file.rows.length,
        bytes: file.bytes.byteLength,
        status: String(ended?.status),
        counts: ended === undefined ? {} : countsOf(ended),
        cronRuns,
        raced,
        clientOps: operations.length,
        virtualMs,
        injected: {
          ...cluster.injected,
          ...objects.injected,
          r2Failed: bucket.failed,
          chunksMoved: objects.chunksMoved,
        },
        violations,
      };
    }
  } finally {
    uninstallStreams();
    world.uninstall();
  }
}

/**
 * Every data row has exactly one outcome, read from what the service holds: created (a System
 * record by the importer, whose values are the row's, in a `created` change), updated (a change
 * by the importer after which the record holds the row's values, made to the record that held
 * the row's code), unchanged (nothing written: only a row whose values a record held before the
 * import), or failed (listed once in import_errors). Rows that must be refused are; a good row is
 * refused only for its code: held by another live record (a create), or, in an upsert, taken or
 * its matched record deleted between the chunk's read and its write. The import's counts are those
 * outcomes; a finished import processed every row, a cancelled one the rows before its cancel
 * and none after. Returns the good rows of an upsert refused for a race, by problem.
 */
function checkImport(
  violations: string[],
  file: ImportFile,
  state: Record<string, any>,
  errors: { row: number; errors: string }[],
  feed: readonly any[],
  importerId: number,
  cancels: readonly Answer[],
): Record<string, number> {
  const total = file.rows.length;
  if (state.total !== total) violations.push(`the import counted ${state.total} rows in its file of ${total}`);
  const status = state.status as string;
  // An import whose every row failed is failed (a cancel before its last chunk notwithstanding).
  const allFailed = state.processed === total && total > 0 && state.failed === total;
  const expectedStatus = allFailed ? 'failed' : cancels.some((a) => a.status === 200) ? 'cancelled' : 'succeeded';
  if (status !== expectedStatus)
    violations.push(
      `the import ended ${status}, expected ${expectedStatus} (cancels: ${cancels.map((a) => a.status)})`,
    );
  for (const answer of cancels)
    if (answer.status === 200 && JSON.stringify(answer.body.rows) !== JSON.stringify(countsOf(state)))
      violations.push(
        `a cancel answered rows ${JSON.stringify(answer.body.rows)}, ` +
          `the import ended with ${JSON.stringify(countsOf(state))}`,
      );
  if (status !== 'cancelled' && state.processed !== total)
    violations.push(`the import succeeded having processed ${state.processed} of ${total} rows`);
  const processed = state.processed as number;

  const outcome = new Map<number, string[]>();
  const add = (row: number, what: string) => outcome.set(row, [...(outcome.get(row) ?? []), what]);
  const rowOf = (n: unknown): FileRow | undefined =>
    typeof n === 'number' && Number.isSafeInteger(n) ? file.rows[n - 1] : undefined;

  // The importer's changes, in commit order, folded over every record's history.
  const states = new Map<number, any>();
  /** Rows whose values a record held by another's write (a row left unchanged must be one). */
  const heldBefore = new Set<number>();
  /** Codes (folded) a live record held at some time. */
  const everHeld = new Set<string>();
  // Codes another's write gave a live record, or took from one by deleting it, while the import
  // ran (from its creation, less a write's deadline): the races a good row of an upsert may lose.
  const since = (state.created_at as number) - CALL_DEADLINE_MS;
  const taken = new Set<string>();
  const deleted = new Set<string>();
  /** Records deleted at some time (a good row of an update naming one may be refused for it). */
  const deletedIds = new Set<number>();
  let created = 0;
  let updated = 0;
  for (const item of feed) {
    const prev = states.get(item.recordId);
    const next = foldItem(prev, item);
    states.set(item.recordId, next);
    const n = next.fieldValues.n;
    const row = rowOf(n);
    const key = codeKey(next.fieldValues.code);
    if (item.type === 'deleted') deletedIds.add(item.recordId);
    if (key !== undefined && !next.deleted) everHeld.add(key);
    if (key !== undefined && item.by !== importerId && item.at >= since)
      (item.type === 'deleted' ? deleted : taken).add(key);
    if (item.by !== importerId) {
      if (row?.values !== undefined && holds(next.fieldValues, row.values)) heldBefore.add(n);
      continue;
    }
    const at = `record ${item.recordId} v${item.version} ${item.type}`;
    if (item.type === 'created') {
      created++;
      add(n, `created ${item.recordId}`);
      if (file.mode === 'update') violations.push(`${at}: an update by id created a record`);
      if (item.record.creationType !== 'System' || item.record.createdBy !== importerId)
        violations.push(`${at}: creationType ${item.record.creationType} by ${item.record.createdBy}`);
      if (row?.values === undefined) violations.push(`${at}: made by the import from no good row (n ${n})`);
      else if (!equals(next.fieldValues, row.values))
        violations.push(`${at}: holds ${JSON.stringify(next.fieldValues)}, row ${n} ${JSON.stringify(row.values)}`);
    } else if (item.type === 'updated') {
      updated++;
      add(n, `updated ${item.recordId}`);
      if (file.mode === 'create') violations.push(`${at}: a create import updated a record`);
      if (row?.values === undefined) violations.push(`${at}: updated by the import from no good row (n ${n})`);
      else if (file.mode === 'update') violations.push(...updatedById(at, row, item.recordId, prev, next));
      else {
        if (!holds(next.fieldValues, row.values))
          violations.push(`${at}: holds ${JSON.stringify(next.fieldValues)}, row ${n} ${JSON.stringify(row.values)}`);
        if (codeKey(prev?.fieldValues.code) !== rowKey(row.values) || prev?.deleted !== false)
          violations.push(
            `${at}: row ${n} (code ${JSON.stringify(row.values.code)}) was applied to a record that held ` +
              `${JSON.stringify(prev?.fieldValues.code)}${prev?.deleted ? ' (deleted)' : ''}`,
          );
      }
    } else violations.push(`${at}: the import made a change of type ${item.type}`);
  }
  const raced: Record<string, number> = {};
  for (const { row, errors: listed } of errors) {
    add(row, 'failed');
    if (row < 1 || row > total) violations.push(`import_errors lists row ${row} of ${total}`);
    const problems = JSON.parse(listed) as { code: string }[];
    const good = rowOf(row)?.values;
    if (good === undefined) continue;
    // A good row is refused only when its code is held by another record (in a create), or for
    // a race: a code taken or a matched record deleted between the chunk's read and its write.
    const codes = problems.map((p) => p.code);
    const key = rowKey(good) as string;
    const named = rowOf(row)?.id;
    const allowed = codes.every((c) =>
      file.mode === 'create'
        ? c === 'unique_violation' && everHeld.has(key)
        : file.mode === 'update'
          ? c === 'record_deleted' && named !== undefined && deletedIds.has(named)
          : (c === 'unique_violation' && taken.has(key)) || (c === 'record_deleted' && deleted.has(key)),
    );
    if (!allowed || codes.length === 0) violations.push(`good row ${row} refused: ${listed}`);
    if (file.mode === 'upsert') for (const code of codes) raced[code] = (raced[code] ?? 0) + 1;
  }
  let unchanged = 0;
  for (let n = 1; n <= total; n++) {
    const seen = outcome.get(n) ?? [];
    const row = file.rows[n - 1] as FileRow;
    if (n > processed) {
      if (seen.length > 0) violations.push(`row ${n}, after the ${processed} processed, has outcomes ${seen}`);
      continue;
    }
    if (seen.length > 1) violations.push(`row ${n} has ${seen.length} outcomes: ${seen.join(', ')}`);
    if (seen.length === 1) {
      if (row.values === undefined && seen[0] !== 'failed')
        violations.push(`row ${n} (${row.bad}) was not refused: ${seen[0]}`);
      continue;
    }
    unchanged++;
    // Nothing written: the row's values must have been a record's before the import (n is the
    // row's own number, so only a record made to hold this row's values holds it).
    if (row.values === undefined) violations.push(`row ${n} (${row.bad}) has no outcome at all`);
    else if (file.mode !== 'upsert') violations.push(`row ${n} of a ${file.mode} has no outcome at all`);
    else if (!heldBefore.has(n)) violations.push(`row ${n} counted unchanged, but no record held its values`);
  }
  const held = { processed, created, updated, unchanged, failed: errors.length, total };
  if (JSON.stringify(held) !== JSON.stringify(countsOf(state)))
    violations.push(`the import counts ${JSON.stringify(countsOf(state))}, its outcomes are ${JSON.stringify(held)}`);
  return raced;
}

/**
 * An update by id's change: made to the record the row names, live before it, which then holds the
 * row's values, and none of the fields whose empty CSV cells removed them.
 */
function updatedById(at: string, row: FileRow, recordId: number, prev: any, next: any): string[] {
  const violations: string[] = [];
  if (row.id !== recordId) violations.push(`${at}: row ${row.number} names record ${row.id}`);
  if (prev?.deleted !== false) violations.push(`${at}: row ${row.number} was applied to a deleted record`);
  if (!holds(next.fieldValues, row.values ?? {}) || (row.blank ?? []).some((f) => next.fieldValues[f] !== undefined))
    violations.push(
      `${at}: holds ${JSON.stringify(next.fieldValues)}, row ${row.number} ${JSON.stringify(row.values)}`,
    );
  return violations;
}

function countsOf(state: Record<string, any>): Record<string, number> {
  const { processed, created, updated, unchanged, failed, total } = state;
  return { processed, created, updated, unchanged, failed, ...(total === null ? {} : { total }) };
}

/**
 * No lost update, whoever wrote: each record's versions in the feed run 1, 2, 3…; the feed
 * folds into every record as stored; each client write answered 200 is in the feed exactly once
 * and one finally refused not at all; every record answered is the feed's state at its version.
 */
function checkHistory(feed: readonly any[], stored: readonly any[], operations: readonly Operation[]): string[] {
  const violations: string[] = [];
  const versions = new Map<number, number>();
  const states = new Map<string, any>();
  const current = new Map<number, any>();
  const written = new Map<string, number>();
  for (const item of feed) {
    const expected = (versions.get(item.recordId) ?? 0) + 1;
    if (item.version !== expected)
      violations.push(`record ${item.recordId}: feed version ${item.version} after ${expected - 1}`);
    versions.set(item.recordId, item.version);
    const before = current.get(item.recordId);
    const state = foldItem(before, item);
    current.set(item.recordId, state);
    states.set(`${item.recordId}@${item.version}`, state);
    const title = state.fieldValues.title;
    if (typeof title === 'string' && title.startsWith('Ét') && before?.fieldValues.title !== title)
      written.set(title, (written.get(title) ?? 0) + 1);
  }
  for (const record of stored)
    if (!sameState(record, states.get(`${record.id}@${record.version}`)))
      violations.push(`record ${record.id} v${record.version}: the feed's fold differs from the stored record`);
  for (const op of operations) {
    const last = op.answers.at(-1) as Answer;
    const ok = last.status === 200 || last.status === 201;
    for (const token of op.tokens) {
      const count = written.get(token) ?? 0;
      if (ok && count !== 1) violations.push(`${op.key} ${token}: answered ${last.status} but written ${count} times`);
      if (!ok && final(last) && count !== 0)
        violations.push(`${op.key} ${token}: answered ${last.status} but written ${count} times`);
    }
    // Once a key has succeeded, it answers that, byte for byte.
    const first = op.answers.find((a) => a.status === 200 || a.status === 201);
    for (const later of op.answers.slice(op.answers.indexOf(first as Answer) + 1))
      if (first !== undefined && final(later) && (later.status !== first.status || later.text !== first.text))
        violations.push(`${op.key}: answered ${first.status}, then ${later.status} ${later.text.slice(0, 100)}`);
    for (const answer of op.answers)
      for (const record of answeredRecords(answer))
        if (!sameState(record, states.get(`${record.id}@${record.version}`)))
          violations.push(`${op.key} answered record ${record.id} v${record.version}, which the feed does not hold`);
  }
  return violations;
}

/**
 * What D1 holds beside the feed: no two live records share a code's fold; each record's unique
 * key is its code's fold while live; its stored keys are the Worker's; System records are the
 * importer's and as many as the import created, no row's number twice.
 */
function checkStored(
  db: SqliteD1['db'],
  objectId: number,
  importerId: number,
  state: Record<string, any>,
  stored: readonly any[],
): string[] {
  const violations: string[] = [];
  const live = new Map<string, number>();
  for (const record of stored) {
    if (record.objectId !== objectId) continue;
    const values = byName(record).fieldValues as Values;
    const key = codeKey(values.code);
    if (!record.deleted && key !== undefined) {
      if (live.has(key)) violations.push(`records ${live.get(key)} and ${record.id} both hold code ${key}`);
      live.set(key, record.id);
    }
  }
  const rows = db
    .prepare(
      `SELECT r.id, r.name, r.field_values, r.deleted, r.name_key, r.terms, r.folds,
         (SELECT json_group_array(json_array(field, unique_key)) FROM record_index i
           WHERE i.record_id = r.id) AS indexed
       FROM records r WHERE r.object_id = ?`,
    )
    .all(objectId) as Record<string, any>[];
  for (const row of rows) {
    const values = JSON.parse(row.field_values) as { fieldName: string; value: unknown }[];
    const keys = recordKeys(String(row.name), values);
    if (row.name_key !== keys.nameKey || row.terms !== keys.terms || row.folds !== keys.folds)
      violations.push(`record ${row.id}: its stored keys differ from the Worker's`);
    const code = values.find((v) => v.fieldName === 'code')?.value;
    const expected = code === undefined ? [] : [['code', row.deleted === 0 ? codeKey(code) : null]];
    if (JSON.stringify(JSON.parse(row.indexed)) !== JSON.stringify(expected))
      violations.push(`record ${row.id}: unique key ${row.indexed}, its code ${JSON.stringify(code)}`);
  }
  const system = db
    .prepare(
      `SELECT created_by AS by, json_extract(field_values, '$') AS v FROM records
       WHERE object_id = ? AND creation_type = 'System'`,
    )
    .all(objectId) as { by: number; v: string }[];
  if (system.some((r) => r.by !== importerId)) violations.push('a System record was created by another user');
  if (system.length !== state.created)
    violations.push(`${system.length} System records, the import counts ${state.created} created`);
  const numbers = system.map(
    (r) => (JSON.parse(r.v) as { fieldName: string; value: unknown }[]).find((f) => f.fieldName === 'n')?.value,
  );
  const seen = new Set<unknown>();
  const twice = numbers.filter((n) => seen.has(n) || !seen.add(n));
  if (twice.length > 0) violations.push(`rows created twice: ${[...new Set(twice)].join(', ')}`);
  return violations;
}

/** The records a 200 or 201 answered. */
function answeredRecords(answer: Answer): any[] {
  if (answer.status !== 200 && answer.status !== 201) return [];
  const body = answer.body;
  return Array.isArray(body) ? body.map((item) => item.record) : [body];
}
