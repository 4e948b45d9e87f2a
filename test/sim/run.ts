/// <reference types="node" />
import { KEPT_ROWS, RECORD_ROWS, STALE_ROWS, totalsDiffer, type KeptRow, type RecordRow } from '../totals-fold.ts';
import { LEDGER_TTL_MS } from '../../src/scheduled.ts';
import { SETTLE_MS } from '../../src/write/formula-build.ts';
import { KEY_TTL_MS, LEASE_MS } from '../../src/storage/idempotency.ts';
import { RECORD_COLUMNS, recordsOf, type RecordReadRow } from '../../src/storage/store.ts';
import { buildsOf, ROLLUPS_BUILD, rollupStep } from '../../src/storage/record-index.ts';
import { byName, foldItem } from '../feed-fold.ts';
import { ADMIN_TOKEN, Cluster, NO_FAULTS, type Faults, type Injected } from './cluster.ts';
import { SqliteD1 } from './sqlite-d1.ts';
import { foldCase } from '../../src/core/fold.ts';
import { recordKeys } from '../../src/domain/record-keys.ts';
import { EPOCH, World } from './world.ts';
import { DEFAULT_TENANT, idRange } from '../../src/domain/tenant.ts';
import { forgetRoute } from '../../src/tenancy/routes.ts';
import { ofTenant, TENANT_TABLES } from '../../src/tenancy/tenant-tables.ts';
import { client, migrations, resetIsolate, sameState, type Answer } from './harness.ts';

/**
 * One simulated run: a few clients, each of one of the tenants (the default one on DB, two more on
 * databases of their own), send concurrent patches, batches (some changing nothing),
 * creates, deletes and restores, with and without Idempotency-Key and If-Match, through the
 * production Worker and objects, while the network fails calls, loses replies and resets
 * objects. Some writes set, change or clear references to a few companies while others delete
 * and restore those companies. Then, with the faults off, the history is checked against what
 * the service holds.
 */

/** Each run draws how hostile its network is, from calm to 1 call in 2 failing or losing its reply. */
function faultsOf(world: World): Faults {
  return {
    fail: world.random() * 0.15,
    lose: world.random() * 0.3,
    restart: world.random() * 0.2,
    crash: world.random() * 0.05,
    slow: world.random() * 0.02,
    // Twins are rare in production; here one run in two has them, often enough to meet a write.
    twin: world.chance(0.5) ? world.random() * 0.3 : 0,
  };
}

export interface RunReport {
  seed: number;
  requests: number;
  /** Virtual milliseconds the run took. */
  virtualMs: number;
  injected: Injected;
  /**
   * How many answers of each status (503s that said the outcome is unknown, and refusals for
   * references, apart), over the run's attempts.
   */
  answers: Record<string, number>;
  /** Keys still claimed after the run (their write lost with its coordinator): free once the lease ended. */
  leasedKeys: number;
  /** A tenant's move in the run: how it ended. */
  move?: string;
  /** The objects' alarms run, and those cut short (a reset, a throw) and run again. */
  alarms: { ran: number; interrupted: number };
  violations: string[];
}

/** One attempt of a client's operation: what it sent and what it heard. */
interface Attempt {
  op: string;
  key: string | undefined;
  /** The unique values this attempt writes into `title`: present in the history iff it committed. */
  tokens: string[];
  status: number;
  code: string | undefined;
  text: string;
  /** Answered 409 with Retry-After: the same key still running elsewhere. */
  retryAfter: boolean;
  /** Virtual times the request was sent and answered. */
  sentAt: number;
  answeredAt: number;
  request: { method: string; path: string; body: unknown; headers: Record<string, string> };
  /** The tenant whose client sent it, and the token it sent. */
  tenant: Tenant;
  token: string;
}

/** One tenant of the runs: where it lives, its keys, and what setup made in it. */
interface Tenant {
  id: number;
  database: string;
  d1: SqliteD1;
  /** Its administrator's token: ADMIN_TOKEN for the default tenant, else its first administrator's key. */
  admin: string;
  key: string;
  /** The key of a member whose defined role hides `flag` (a write naming it is refused them). */
  memberKey: string;
  workspace: number;
  objectId: number;
  records: number[];
  /** The records that Sim records reference: companies. */
  companies: number[];
  /** Their object, whose rollups count the records holding each by `company` and by `partners`. */
  companyObjectId: number;
  /** The reference fields of every object. */
  referenceFields: ReferenceField[];
}

interface Setup {
  databases: Record<string, SqliteD1>;
  tenants: Tenant[];
  /**
   * The virtual time setup ended: a run's clock starts again at 0, and a change is timed no
   * earlier than its record's last (so a run's first changes of setup records are timed then).
   */
  setupEnd: number;
}

interface ReferenceField {
  objectId: number;
  name: string;
  target: number;
  multiple: boolean;
  onDelete: 'restrict' | 'keep';
}

/** A request as a client sends it, with the tokens it writes. */
interface Sent {
  method: string;
  path: string;
  body: unknown;
  tokens: string[];
}

interface FieldValue {
  fieldName: string;
  value: unknown;
}

const RECORDS = 3;
const COMPANIES = 3;
/** The values upserts match on. */
// Codes beyond ASCII with case: their unique keys are the Worker's folds.
const CODES = ['Äa', 'b', 'ΣC'];
/** The databases of the runs: the default tenant on DB, a tenant of its own on each other. */
const DATABASES = ['DB', 'DB_2', 'DB_3'];
let prepared: Setup | undefined;

/**
 * Setup, made once per process and snapshotted: a tenant on each database (the default one on
 * DB), each with a user with a key, a workspace, an object and records.
 */
async function setup(): Promise<Setup> {
  if (prepared !== undefined) return prepared;
  const world = new World(0);
  const databases = Object.fromEntries(DATABASES.map((name) => [name, SqliteD1.migrated(migrations())]));
  world.install();
  try {
    const http = client(world, new Cluster(world, databases, NO_FAULTS));
    const tenants: Tenant[] = [];
    for (const database of DATABASES) {
      let id = DEFAULT_TENANT;
      let admin = ADMIN_TOKEN;
      if (database !== 'DB') {
        const made = await http.json('POST', '/tenants', ADMIN_TOKEN, { name: `sim ${database}`, database });
        if (made.status !== 201) throw new Error(`setup: a tenant answered ${made.status} ${made.text}`);
        ({ id, adminKey: admin } = made.body as { id: number; adminKey: string });
      }
      tenants.push(await populate(http, id, admin, database, databases[database] as SqliteD1));
    }
    prepared = { databases, tenants, setupEnd: Math.ceil(world.now) };
    return prepared;
  } finally {
    world.uninstall();
  }
}

/** A tenant's user with a key, workspace, objects and records, made by its administrator. */
async function populate(
  http: ReturnType<typeof client>,
  id: number,
  adminToken: string,
  database: string,
  d1: SqliteD1,
): Promise<Tenant> {
  {
    const admin = (method: string, path: string, body?: unknown) =>
      http.json(method, path, adminToken, body).then((answer) => answer.body as Record<string, any>);
    const user = await admin('POST', '/admin/users', { name: 'sim' });
    const { key } = await admin('POST', `/admin/users/${user.id}/keys`);
    const workspace = await admin('POST', '/admin/workspaces', { name: 'sim' });
    await admin('PUT', `/admin/workspaces/${workspace.id}/members/${user.id}`, { role: 'editor' });
    // Sim records reference companies: `company` one of them (deleting it is refused while a live
    // record holds it), `partners` several (a delete lets them stay).
    const company = await admin('POST', '/admin/objects', {
      name: 'SimCompany',
      workspaceIds: [workspace.id],
      nameTemplate: '{title}',
      fields: [{ name: 'title', type: 'text' }],
    });
    const object = await admin('POST', '/admin/objects', {
      name: 'Sim',
      workspaceIds: [workspace.id],
      nameTemplate: '{title}',
      fields: [
        { name: 'title', type: 'text' },
        { name: 'flag', type: 'boolean' },
        { name: 'code', type: 'text', unique: true },
        { name: 'company', type: 'reference', target: company.id },
        { name: 'partners', type: 'reference', target: company.id, multiple: true, onDelete: 'keep' },
      ],
    });
    const made = await http.json(
      'POST',
      '/records/batch',
      key,
      Array.from({ length: COMPANIES }, (_, i) => ({
        objectId: company.id,
        fieldValues: [{ fieldName: 'title', value: `company-${i}` }],
      })),
    );
    if (made.status !== 201) throw new Error(`setup: create answered ${made.status} ${made.text}`);
    const companies = (made.body as { record: { id: number } }[]).map((item) => item.record.id);
    // Each company counts the live records holding it, by each reference: computed for the
    // companies already made, then kept by every write however it fails, restarts or moves.
    const byReference = (name: string, field: string) => ({
      name,
      type: 'rollup',
      from: { objectId: object.id, field },
      op: 'count',
    });
    const counted = await admin('PUT', `/admin/objects/${company.id}`, {
      name: 'SimCompany',
      workspaceIds: [workspace.id],
      nameTemplate: '{title}',
      fields: [
        { name: 'title', type: 'text' },
        byReference('holders', 'company'),
        byReference('partnered', 'partners'),
      ],
    });
    if (counted.fields === undefined) throw new Error(`setup: rollups answered ${JSON.stringify(counted)}`);
    // Their computation for the companies made before them, as the object's builder runs it.
    const store = d1 as unknown as D1Database;
    for (let build = await buildsOf(store, company.id); build.length > 0; build = await buildsOf(store, company.id))
      for (const due of build.filter((b) => b.field === ROLLUPS_BUILD)) await rollupStep(store, company.id, due);
    // The first record holds a company, the second two partners, the third another company.
    const links: FieldValue[][] = [
      [{ fieldName: 'company', value: companies[0] }],
      [{ fieldName: 'partners', value: [companies[1], companies[2]] }],
      [{ fieldName: 'company', value: companies[1] }],
    ];
    // A member under a defined role: everything an editor may do, but `flag` is hidden from them.
    const rights = { read: true, create: true, update: true, delete: true };
    const role = await admin('POST', '/admin/roles', {
      name: 'sim member',
      objects: [
        { objectId: object.id, ...rights, fields: { flag: 'hidden' } },
        { objectId: company.id, ...rights },
      ],
    });
    const member = await admin('POST', '/admin/users', { name: 'sim member' });
    const { key: memberKey } = await admin('POST', `/admin/users/${member.id}/keys`);
    await admin('PUT', `/admin/workspaces/${workspace.id}/members/${member.id}`, { roleId: role.id });
    const created = await http.json(
      'POST',
      '/records/batch',
      key,
      Array.from({ length: RECORDS }, (_, i) => ({
        objectId: object.id,
        fieldValues: [
          { fieldName: 'title', value: `setup-${i}` },
          { fieldName: 'flag', value: true },
          ...(links[i] ?? []),
        ],
      })),
    );
    if (created.status !== 201) throw new Error(`setup: create answered ${created.status} ${created.text}`);
    return {
      id,
      database,
      d1,
      admin: adminToken,
      key: key as string,
      memberKey: memberKey as string,
      workspace: workspace.id as number,
      objectId: object.id as number,
      records: (created.body as { record: { id: number } }[]).map((item) => item.record.id),
      companies,
      companyObjectId: company.id as number,
      referenceFields: [
        { objectId: object.id, name: 'company', target: company.id, multiple: false, onDelete: 'restrict' },
        { objectId: object.id, name: 'partners', target: company.id, multiple: true, onDelete: 'keep' },
      ],
    };
  }
}

export async function simulate(seed: number): Promise<RunReport> {
  const base = await setup();
  // Every database as it was after setup, for each run.
  const isolated = Object.values(base.databases).reduce<() => Promise<RunReport>>(
    (inner, d1) => () => d1.isolated(inner),
    () => run(seed, base),
  );
  return isolated();
}

async function run(seed: number, base: Setup): Promise<RunReport> {
  const world = new World(seed);
  const cluster = new Cluster(world, base.databases, faultsOf(world));
  const violations: string[] = [];
  world.install();
  try {
    for (const tenant of base.tenants) {
      resetIsolate(tenant.workspace);
      forgetRoute(tenant.id);
    }
    const http = client(world, cluster);
    const attempts: Attempt[] = [];
    let requests = 0;
    const send = async (
      tenant: Tenant,
      op: string,
      method: string,
      path: string,
      body: unknown,
      tokens: string[],
      headers: Record<string, string> = {},
      member = false,
    ): Promise<Answer> => {
      requests++;
      const sentAt = world.now;
      const token = op === 'workspace' ? tenant.admin : member ? tenant.memberKey : tenant.key;
      const answer = await http.send(method, path, token, body, headers);
      if (process.env.SIM_TRACE)
        console.log(
          `${Math.round(world.now)} ${op} ${method} ${path} ${JSON.stringify(headers)} ${tokens} ` +
            `-> ${answer.status} ${answer.text.slice(0, 160)}`,
        );
      attempts.push({
        op,
        key: headers['Idempotency-Key'],
        tokens,
        status: answer.status,
        code: answer.code,
        text: answer.text,
        retryAfter: answer.retryAfter,
        sentAt,
        answeredAt: world.now,
        request: { method, path, body, headers: { ...headers } },
        tenant,
        token,
      });
      return answer;
    };

    const clients = world.between(2, 4);
    // The tenants this run's clients write to: one to all of them, so some runs race on one tenant.
    const used = base.tenants.filter(() => world.chance(0.6));
    const tenants = used.length === 0 ? [world.pick(base.tenants)] : used;
    // In one run in two the operator moves a tenant to another database, and the clients start
    // together at a moment of the move (its copy, catch-up or switch).
    const moving = world.chance(0.5);
    const offset = moving ? world.between(0, 800) : 0;
    const work = Array.from({ length: clients }, async (_, c) => {
      const tenant = world.pick(tenants);
      const { workspace, objectId, records, companies } = tenant;
      // Some clients are members under a role that hides `flag`: their writes naming it are refused.
      const member = world.chance(0.3);
      await world.sleep(offset + world.between(0, 20));
      const ops = world.between(1, 4);
      for (let o = 0; o < ops; o++) {
        const keyed = world.chance(0.5);
        const key = keyed ? `k-${c}-${o}` : undefined;
        const token = (a: number, i = 0): string => `Ét${c}.${o}.${keyed ? 0 : a}.${i}`;
        const id = world.pick(records);
        const kind = world.pick([
          'patch',
          'patch',
          'ifMatch',
          'batch',
          'batchAll',
          'create',
          'upsert',
          'delete',
          'restore',
          'workspace',
          // Writes that set, change or clear references, racing deletes and restores of their targets.
          'link',
          'link',
          'linkBatch',
          'linkCreate',
          'linkUpsert',
          'companyDelete',
          'companyDelete',
          'companyRestore',
          'orphan',
        ]);
        const headers: Record<string, string> = key === undefined ? {} : { 'Idempotency-Key': key };
        if (kind === 'ifMatch') {
          const read = await send(tenant, 'read', 'GET', `/records/${id}`, undefined, [], {}, member);
          if (read.status === 200) headers['If-Match'] = `"${(read.body as { version: number }).version}"`;
        }
        // Drawn once: a keyed operation is sent again as it was. Some batch elements change
        // nothing (flag is already true): their write is a guard alone.
        const chosen = records.filter(() => world.chance(0.6));
        const batchIds = chosen.length === 0 ? [id] : chosen;
        const noop = batchIds.map(() => world.chance(0.3));
        const creates = world.between(1, 2);
        // Upserts match on a unique code drawn from a few, so clients race on the same values.
        const codes = world.chance(0.5) ? [world.pick(CODES)] : CODES.filter(() => world.chance(0.5)).slice(0, 2);
        const upserted = codes.length === 0 ? [world.pick(CODES)] : codes;
        const company = world.pick(companies);
        // The references each element of a write sets: a company or none, and sometimes partners
        // (none: a patch clears them).
        const linked = Array.from({ length: RECORDS }, () => ({
          company: world.pick<number | null>([...companies, null]),
          partners: world.chance(0.3) ? companies.filter(() => world.chance(0.6)) : undefined,
        }));
        const links = (i: number, patch: boolean): FieldValue[] => {
          const { company: to, partners } = linked[i] as (typeof linked)[number];
          const clear = (fieldName: string): FieldValue[] => (patch ? [{ fieldName, value: null }] : []);
          return [
            ...(to === null ? clear('company') : [{ fieldName: 'company', value: to }]),
            ...(partners === undefined
              ? []
              : partners.length === 0
                ? clear('partners')
                : [{ fieldName: 'partners', value: partners }]),
          ];
        };
        const request = (a: number): Sent => {
          switch (kind) {
            case 'patch':
            case 'ifMatch':
            case 'link':
              return {
                method: 'PATCH',
                path: `/workspaces/${workspace}/records/${id}`,
                body: {
                  fieldValues: [{ fieldName: 'title', value: token(a) }, ...(kind === 'link' ? links(0, true) : [])],
                },
                tokens: [token(a)],
              };
            case 'batch':
            case 'batchAll':
              return {
                method: 'PATCH',
                path: kind === 'batch' ? `/workspaces/${workspace}/records/batch` : '/records/batch',
                body: batchIds.map((recordId, i) => ({
                  id: recordId,
                  fieldValues: [
                    noop[i] ? { fieldName: 'flag', value: true } : { fieldName: 'title', value: token(a, i) },
                  ],
                })),
                tokens: batchIds.flatMap((_, i) => (noop[i] ? [] : [token(a, i)])),
              };
            case 'linkBatch':
              return {
                method: 'PATCH',
                path: `/workspaces/${workspace}/records/batch`,
                body: batchIds.map((recordId, i) => ({
                  id: recordId,
                  fieldValues: [{ fieldName: 'title', value: token(a, i) }, ...links(i, true)],
                })),
                tokens: batchIds.map((_, i) => token(a, i)),
              };
            case 'upsert':
            case 'linkUpsert':
              return {
                method: 'POST',
                path: `/objects/${objectId}/records/upsert`,
                body: {
                  matchOn: 'code',
                  items: upserted.map((code, i) => ({
                    fieldValues: [
                      { fieldName: 'code', value: code },
                      { fieldName: 'title', value: token(a, i) },
                      { fieldName: 'flag', value: true },
                      ...(kind === 'linkUpsert' ? links(i, false) : []),
                    ],
                  })),
                },
                tokens: upserted.map((_, i) => token(a, i)),
              };
            case 'workspace':
              // An admin write: its token is the new workspace's name.
              return { method: 'POST', path: '/admin/workspaces', body: { name: token(a) }, tokens: [token(a)] };
            case 'create':
            case 'linkCreate':
              return {
                method: 'POST',
                path: '/records/batch',
                body: Array.from({ length: creates }, (_, i) => ({
                  objectId,
                  fieldValues: [
                    { fieldName: 'title', value: token(a, i) },
                    { fieldName: 'flag', value: true },
                    ...(kind === 'linkCreate' ? links(i, false) : []),
                  ],
                })),
                tokens: Array.from({ length: creates }, (_, i) => token(a, i)),
              };
            default: {
              // delete, restore, companyDelete, companyRestore
              const restore = kind === 'restore' || kind === 'companyRestore';
              const target = kind.startsWith('company') ? company : id;
              return {
                method: restore ? 'POST' : 'DELETE',
                path: `/workspaces/${workspace}/records/${target}${restore ? '/restore' : ''}`,
                body: undefined,
                tokens: [],
              };
            }
          }
        };
        // One operation, sent until its answer is final: a keyed one again under its key, an
        // unkeyed one only after a plain 503 ("nothing was written"), as a new write.
        const operate = async (op: string, request: (a: number) => Sent, headers: Record<string, string>) => {
          for (let a = 0; a < 6; a++) {
            const { method, path, body, tokens } = request(a);
            const answer = await send(tenant, op, method, path, body, tokens, headers, member);
            const again =
              key !== undefined
                ? answer.status >= 500 || (answer.status === 409 && answer.retryAfter)
                : answer.status === 503 && !unknownOutcome(answer.text);
            if (!again) break;
            await world.sleep(world.between(5, 50) * (a + 1));
          }
        };
        if (kind !== 'orphan') {
          await operate(kind, request, headers);
          continue;
        }
        // Three operations in a row, each under a key of its own if keyed: delete a Sim record,
        // delete the company it references (allowed once nothing live references it), restore the
        // record (refused while that company is deleted), as other clients race them.
        const read = await send(tenant, 'read', 'GET', `/records/${id}`, undefined, [], {}, member);
        const held = (read.body as { fieldValues?: FieldValue[] } | undefined)?.fieldValues;
        const target = held?.find((v) => v.fieldName === 'company')?.value;
        const steps: [string, string, string][] = [
          ['orphanDelete', 'DELETE', `/workspaces/${workspace}/records/${id}`],
          [
            'orphanCompany',
            'DELETE',
            `/workspaces/${workspace}/records/${typeof target === 'number' ? target : company}`,
          ],
          ['orphanRestore', 'POST', `/workspaces/${workspace}/records/${id}/restore`],
        ];
        for (const [s, [op, method, path]] of steps.entries())
          await operate(op, () => ({ method, path, body: undefined, tokens: [] }), {
            ...(key === undefined ? {} : { 'Idempotency-Key': `${key}-${s}` }),
          });
      }
    });
    const move = moving ? operate(world, http, base, tenants) : undefined;
    // One run in three (no random draw decides it: other runs keep their schedules), an
    // administrator adds a formula to one tenant's Sim object as clients write, and its builder
    // computes it for the records written before, under the same faults.
    const formula =
      world.seed % 3 === 0
        ? defineFormula(world, http, cluster, tenants[world.seed % tenants.length] as Tenant)
        : undefined;
    let finished = 0;
    for (const client of work) void client.then(() => finished++);
    await world.run();
    if (finished < clients) violations.push(`${clients - finished} of ${clients} clients never got their answers`);
    if (move !== undefined) {
      cluster.faults = NO_FAULTS;
      violations.push(...(await checkMove(world, cluster, base, await move)));
    }
    if (formula !== undefined) {
      cluster.faults = NO_FAULTS;
      violations.push(...(await checkFormula(world, cluster, base, await formula)));
    }

    // The history, checked with the faults off: every key sent once more, then each tenant's feed read whole.
    cluster.faults = NO_FAULTS;
    const check = (token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      http.json(method, path, token, body, headers);
    let leasedKeys = 0;
    const lastOfKey = new Map<string, Attempt>();
    for (const attempt of attempts) if (attempt.key !== undefined) lastOfKey.set(attempt.key, attempt);
    for (const [key, last] of lastOfKey) {
      const { method, path, body, headers } = last.request;
      let sentAt = world.now;
      let answer = await check(last.token, method, path, body, headers);
      // A key whose write was lost with its coordinator stays claimed until its lease ends.
      if (answer.status === 409 && answer.retryAfter) {
        leasedKeys++;
        const waited = world.sleep(LEASE_MS + 1_000);
        await world.run();
        await waited;
        sentAt = world.now;
        answer = await check(last.token, method, path, body, headers);
      }
      attempts.push({
        ...last,
        op: `${last.op} replayed`,
        status: answer.status,
        code: answer.code,
        text: answer.text,
        retryAfter: answer.retryAfter,
        sentAt,
        answeredAt: world.now,
      });
      if (!final(attempts.at(-1) as Attempt))
        violations.push(
          `key ${key}: no final answer without faults: ${attempts
            .filter((a) => a.key === key)
            .map((a) => a.status)
            .join(', ')}; last ${answer.text.slice(0, 300)}`,
        );
    }
    // A member never hears of a field their role hides, whatever faults their writes met.
    for (const attempt of attempts)
      if (attempt.token === attempt.tenant.memberKey && attempt.text.includes('"fieldName":"flag"'))
        violations.push(`${attempt.op} answered the member a hidden field: ${attempt.text.slice(0, 200)}`);
    const feeds = new Map<Tenant, any[]>();
    for (const tenant of base.tenants) {
      const feed = await feedOf(tenant, (path) => check(tenant.key, 'GET', path));
      feeds.set(tenant, feed);
      const theirs = attempts.filter((attempt) => attempt.tenant === tenant);
      const here = { ...tenant, d1: whereIs(base, tenant) };
      violations.push(...checkTenant(here, feed, theirs, base.setupEnd).map((v) => `tenant ${tenant.id}: ${v}`));
    }
    // One run in four (it costs a quarter of a run): the scheduled prune, with the clock moved on.
    if (world.chance(0.25))
      violations.push(...(await checkPruning(world, cluster, base.tenants, attempts, check, feeds)));
    const answers: Record<string, number> = {};
    for (const { status, text } of attempts) {
      const refusal = referenceRefusal(text);
      const label = status === 503 && unknownOutcome(text) ? '503 unknown' : `${status}${refusal ? ` ${refusal}` : ''}`;
      answers[label] = (answers[label] ?? 0) + 1;
    }
    return {
      seed,
      requests,
      virtualMs: Math.round(world.now),
      injected: cluster.injected,
      answers,
      leasedKeys,
      ...(move === undefined ? {} : { move: (await move).outcome }),
      alarms: cluster.alarmRuns,
      violations,
    };
  } finally {
    world.uninstall();
  }
}

interface MoveRun {
  tenant: Tenant;
  from: string;
  to: string;
  id: number | undefined;
  /** How it ended (or how the operator's requests were answered, when it never started). */
  outcome: string;
}

/**
 * The operator: after a while, moves one of the tenants (not the default one) to another
 * database, sending the request until it is answered (keyed, so a lost answer is replayed), and
 * sometimes cancels it a moment later.
 */
async function operate(
  world: World,
  http: ReturnType<typeof client>,
  base: Setup,
  written: readonly Tenant[],
): Promise<MoveRun> {
  // One the clients write to, when they write to any but the default tenant.
  const others = (list: readonly Tenant[]) => list.filter((t) => t.id !== DEFAULT_TENANT);
  const tenant = world.pick(others(written).length > 0 ? others(written) : others(base.tenants));
  const to = world.pick(DATABASES.filter((name) => name !== tenant.database));
  const cancel = world.chance(0.25);
  const run: MoveRun = { tenant, from: tenant.database, to, id: undefined, outcome: 'never started' };
  await world.sleep(world.between(0, 10));
  const statuses: number[] = [];
  for (let a = 0; a < 8 && run.id === undefined; a++) {
    const answer = await http.send(
      'POST',
      `/tenants/${tenant.id}/move`,
      ADMIN_TOKEN,
      { database: to },
      {
        'Idempotency-Key': `move-${world.seed}`,
      },
    );
    statuses.push(answer.status);
    if (answer.status === 202) run.id = (answer.body as { id: number }).id;
    else await world.sleep(world.between(20, 100) * (a + 1));
  }
  if (run.id === undefined) run.outcome = `never started: ${statuses.join(' ')}`;
  if (run.id === undefined || !cancel) return run;
  await world.sleep(world.between(0, 400));
  for (let a = 0; a < 8; a++) {
    const answer = await http.send('DELETE', `/tenants/${tenant.id}/moves/${run.id}`, ADMIN_TOKEN);
    if (answer.status === 200 || answer.status === 409) break;
    await world.sleep(world.between(20, 100) * (a + 1));
  }
  return run;
}

/** The formula a run adds to a tenant's Sim object: the length of its title. */
const TITLE_LENGTH = { name: 'titleLength', type: 'formula', expression: 'LEN(title)', resultType: 'number' };

interface FormulaRun {
  tenant: Tenant;
  defined: boolean;
}

/**
 * An administrator adds TITLE_LENGTH to the tenant's Sim object (keyed, sent until answered),
 * then the object's builder runs its steps as alarms would, each a fresh actor under the faults.
 */
async function defineFormula(
  world: World,
  http: ReturnType<typeof client>,
  cluster: Cluster,
  tenant: Tenant,
): Promise<FormulaRun> {
  const run: FormulaRun = { tenant, defined: false };
  await world.sleep(world.between(0, 300));
  const path = `/admin/objects/${tenant.objectId}`;
  for (let a = 0; a < 8 && !run.defined; a++) {
    const read = await http.send('GET', path, tenant.admin);
    if (read.status === 200) {
      const { id: _id, version: _version, computing: _computing, ...definition } = read.body as Record<string, any>;
      const body = { ...definition, fields: [...(definition.fields as unknown[]), TITLE_LENGTH] };
      const answer = await http.send('PUT', path, tenant.admin, body, { 'Idempotency-Key': `formula-${world.seed}` });
      run.defined = answer.status === 200;
    }
    if (!run.defined) await world.sleep(world.between(20, 100) * (a + 1));
  }
  for (let steps = 0; run.defined && steps < 300; steps++) {
    const next = await cluster.formulaStep(tenant.objectId).catch(() => Date.now() + 5_000);
    if (next === undefined) break;
    await world.sleep(Math.max(next - Date.now(), world.between(5, 50)));
  }
  return run;
}

/**
 * With the faults off, the computation ends (the clock past the wait for older writes), and every
 * live record of the object holds the length of its title, whoever wrote it when.
 */
async function checkFormula(world: World, cluster: Cluster, base: Setup, run: FormulaRun): Promise<string[]> {
  if (!run.defined) return [];
  const { objectId } = run.tenant;
  for (let i = 0; i < 1000; i++) {
    const step = cluster.formulaStep(objectId, Date.now() + SETTLE_MS);
    await world.run();
    if ((await step) === undefined) break;
  }
  const d1 = whereIs(base, run.tenant);
  const rows = d1.db
    .prepare('SELECT id, field_values FROM records WHERE object_id = ? AND deleted = 0')
    .all(objectId) as { id: number; field_values: string }[];
  const violations: string[] = [];
  for (const row of rows) {
    const values = new Map((JSON.parse(row.field_values) as FieldValue[]).map((v) => [v.fieldName, v.value]));
    const title = values.get('title');
    const expected = typeof title === 'string' ? [...title].length : undefined;
    if (values.get('titleLength') !== expected)
      violations.push(`record ${row.id}: titleLength ${String(values.get('titleLength'))}, its title ${String(title)}`);
  }
  const left = d1.db.prepare('SELECT count(*) AS n FROM index_builds WHERE object_id = ?').get(objectId) as {
    n: number;
  };
  if (left.n > 0) violations.push(`the formula computation of object ${objectId} did not end`);
  return violations;
}

/** The database a tenant is on now, as the catalog says. */
function whereIs(base: Setup, tenant: Tenant): SqliteD1 {
  const row = base.databases.DB?.db.prepare('SELECT database FROM tenants WHERE id = ?').get(tenant.id) as
    { database: string } | undefined;
  return base.databases[row?.database ?? tenant.database] ?? tenant.d1;
}

/** Whether a database holds any row of the tenant. */
function holds(d1: SqliteD1, tenantId: number): boolean {
  return TENANT_TABLES.some((t) => {
    const { where, values } = ofTenant(t, tenantId);
    return (
      d1.db.prepare(`SELECT 1 FROM ${t.table} WHERE ${where} LIMIT 1`).get(...(values as [number, number])) !==
      undefined
    );
  });
}

/**
 * With the faults off, the move ends (the Cron Trigger wakes a mover whose start was lost): it
 * succeeded, with the tenant on the new database and nothing of it left on the old one, or it
 * failed or was cancelled, with the tenant on the old one and nothing of it on the new one; no
 * database logs its changes any more or takes its rows as arriving.
 */
async function checkMove(world: World, cluster: Cluster, base: Setup, run: MoveRun): Promise<string[]> {
  if (run.id === undefined) return [];
  const db = base.databases.DB as SqliteD1;
  const state = () =>
    db.db.prepare(`SELECT status, step ->> '$.phase' AS phase FROM moves WHERE id = ?`).get(run.id as number) as
      { status: string; phase: string } | undefined;
  for (let i = 0; i < 3 && state()?.phase !== 'done'; i++) {
    const woken = cluster.scheduled();
    await world.run();
    await woken;
  }
  const ended = state();
  run.outcome = ended?.status ?? 'missing';
  if (ended?.phase !== 'done') return [`move ${run.id}: still ${ended?.status} at ${ended?.phase}`];
  const at = `move ${run.id} of tenant ${run.tenant.id} (${ended.status})`;
  const violations: string[] = [];
  const [from, to] = [base.databases[run.from] as SqliteD1, base.databases[run.to] as SqliteD1];
  const [here, left] = ended.status === 'succeeded' ? [to, from] : [from, to];
  if (whereIs(base, run.tenant) !== here) violations.push(`${at}: the catalog has the tenant elsewhere`);
  if (!holds(here, run.tenant.id)) violations.push(`${at}: the tenant's database holds none of its rows`);
  if (holds(left, run.tenant.id)) violations.push(`${at}: the other database still holds rows of the tenant`);
  const status = db.db.prepare('SELECT status FROM tenants WHERE id = ?').get(run.tenant.id) as { status: string };
  if (status.status !== 'active') violations.push(`${at}: the tenant is ${status.status}`);
  for (const d1 of [from, to]) {
    const marks = d1.db
      .prepare(
        `SELECT (SELECT count(*) FROM copy_log WHERE tenant_id = ?1) + (SELECT count(*) FROM arrivals
           WHERE tenant_id = ?1) + (SELECT count(*) FROM copying WHERE tenant_id = ?1 AND state = 'copying') AS n`,
      )
      .get(run.tenant.id) as { n: number };
    if (marks.n > 0) violations.push(`${at}: a database still logs or awaits the tenant`);
  }
  return violations;
}

/** A tenant's feed of its workspace, read whole. */
async function feedOf(tenant: Tenant, get: (path: string) => Promise<Answer>): Promise<any[]> {
  const feed: any[] = [];
  for (let after: string | undefined; ;) {
    const page = await get(`/workspaces/${tenant.workspace}/changes?limit=100${after ? `&after=${after}` : ''}`);
    const { items, nextCursor } = page.body as { items: any[]; nextCursor: string };
    feed.push(...items);
    if (items.length === 0) break;
    after = nextCursor;
  }
  return feed;
}

/** The ids of a tenant's block, as SQL bounds. */
function blockOf(tenant: Tenant): [number, number] {
  const { lo, hi } = idRange(tenant.id);
  return [lo, hi];
}

/** Every invariant over one tenant: its feed, its clients' attempts, its rows where it lives. */
function checkTenant(tenant: Tenant, feed: readonly any[], attempts: readonly Attempt[], setupEnd: number): string[] {
  const violations: string[] = [];
  const { d1, referenceFields } = tenant;
  const [lo, hi] = blockOf(tenant);
  // Workspaces made by the run, by name (its tokens), read straight from the database.
  const workspaces = d1.db
    .prepare(`SELECT id, name FROM workspaces WHERE id > ? AND id < ?`)
    .all(tenant.workspace, hi) as { id: number; name: string }[];
  violations.push(...checkHistory(feed, attempts, workspaces));
  // The feed folds into every record as stored (read straight from the database: cheaper than a GET per record).
  const states = statesOf(feed);
  const rows = d1.db.prepare(`SELECT ${RECORD_COLUMNS} FROM records r WHERE r.id >= ? AND r.id < ? ORDER BY r.id`);
  const stored = recordsOf(rows.all(lo, hi) as unknown as RecordReadRow[]);
  // Its rows are on its own database: at least what setup made there.
  if (stored.length < RECORDS + COMPANIES) violations.push(`only ${stored.length} records on its database`);
  // A unique field: no two live records hold the same value, however the writes raced.
  const held = stored.filter((r) => !r.deleted).flatMap((r) => r.fieldValues.filter((f) => f.fieldName === 'code'));
  for (const code of CODES)
    if (held.filter((f) => f.value === code).length > 1) violations.push(`code ${code} held by several live records`);
  for (const record of stored) {
    const folded = states.get(`${record.id}@${record.version}`);
    if (!sameState(record, folded))
      violations.push(`record ${record.id}: the feed's fold differs from the stored record`);
  }
  violations.push(...checkKeys(tenant), ...checkReferences(tenant), ...referencesInFeed(feed, referenceFields));
  violations.push(...checkTotals(tenant), ...checkRollups(tenant));
  violations.push(...checkAnswers(attempts), ...checkLifecycle(feed, attempts, setupEnd));
  return violations;
}

/**
 * The totals kept per group where the tenant lives equal a count of its records (by the companies
 * they reference), whatever failed, restarted or moved; every index row knows if its record is live.
 */
function checkTotals(tenant: Tenant): string[] {
  const [lo, hi] = blockOf(tenant);
  const { db } = tenant.d1;
  const stale = (db.prepare(STALE_ROWS).get(lo, hi) as { n: number }).n;
  const records = db.prepare(RECORD_ROWS).all(lo, hi) as unknown as RecordRow[];
  const kept = db.prepare(KEPT_ROWS).all(lo, hi) as unknown as KeptRow[];
  return [
    ...(stale === 0 ? [] : [`${stale} index rows say their record is live when it is not, or not when it is`]),
    ...totalsDiffer(records, kept),
  ];
}

/**
 * Each company's rollups equal a count of the live records holding it (by `company`, by
 * `partners`), and its sort key of each in every workspace holds that count.
 */
function checkRollups(tenant: Tenant): string[] {
  const [lo, hi] = blockOf(tenant);
  const { db } = tenant.d1;
  const records = db
    .prepare('SELECT field_values FROM records WHERE object_id = ? AND deleted = 0 AND id >= ? AND id < ?')
    .all(tenant.objectId, lo, hi) as { field_values: string }[];
  const expected = new Map<string, number>();
  for (const row of records) {
    const values = JSON.parse(row.field_values) as FieldValue[];
    for (const [rollup, field] of [
      ['holders', 'company'],
      ['partnered', 'partners'],
    ] as const)
      for (const id of idsOf(values.find((v) => v.fieldName === field)?.value))
        expected.set(`${id}/${rollup}`, (expected.get(`${id}/${rollup}`) ?? 0) + 1);
  }
  const kept = db
    .prepare(
      `SELECT i.record_id AS id, i.field, i.value,
         (SELECT json_group_array(s.value) FROM record_sort s WHERE s.record_id = i.record_id
           AND s.key = 'f:' || i.field) AS keys,
         (SELECT count(*) FROM record_workspaces w WHERE w.record_id = i.record_id) AS workspaces
       FROM records r JOIN record_index i ON i.record_id = r.id AND i.role = 4
       WHERE r.object_id = ? AND r.id >= ? AND r.id < ?`,
    )
    .all(tenant.companyObjectId, lo, hi) as {
    id: number;
    field: string;
    value: number;
    keys: string;
    workspaces: number;
  }[];
  const violations: string[] = [];
  if (kept.length !== 2 * tenant.companies.length) violations.push(`${kept.length} rollup rows of companies`);
  for (const row of kept) {
    const count = expected.get(`${row.id}/${row.field}`) ?? 0;
    if (row.value !== count) violations.push(`company ${row.id}: ${row.field} is ${row.value}, its holders ${count}`);
    const keys = JSON.parse(row.keys) as number[];
    if (keys.length !== row.workspaces || keys.some((key) => key !== count))
      violations.push(`company ${row.id}: its sort keys of ${row.field} are ${row.keys}, not ${count}`);
  }
  return violations;
}

/** A 503 that says the write may have committed (as opposed to "busy, nothing was written"). */
function unknownOutcome(text: string): boolean {
  return /outcome_unknown|Outcome unknown/.test(text);
}

/** A final answer: anything but 5xx and a 409 that asks to come back later. */
function final(attempt: Attempt): boolean {
  return attempt.status < 500 && !(attempt.status === 409 && attempt.retryAfter);
}

/** Each record's state after each of its versions, from the feed: `${id}@${version}` -> state by name. */
function statesOf(feed: readonly any[]): Map<string, any> {
  const current = new Map<number, any>();
  const states = new Map<string, any>();
  for (const item of feed) {
    const state = foldItem(current.get(item.recordId), item);
    current.set(item.recordId, state);
    states.set(`${item.recordId}@${item.version}`, state);
  }
  return states;
}

/**
 * Every record's keys and its entries per workspace are what the Worker computes from its name and
 * values, whatever path wrote it and whatever failed around it: its name's key, terms and folds,
 * its terms in each of its workspaces while it is live (none once deleted), its sort keys there
 * (creation, update, name, indexed values, one per id a reference holds), and the unique key of its
 * code.
 */
function checkKeys({ d1, referenceFields, ...tenant }: Tenant): string[] {
  const violations: string[] = [];
  const rows = d1.db
    .prepare(
      `SELECT r.id, r.object_id, r.name, r.field_values, r.deleted, r.name_key, r.terms, r.folds, r.created_at,
         r.updated_at,
         (SELECT json_group_array(workspace_id) FROM record_workspaces w WHERE w.record_id = r.id) AS workspaces,
         (SELECT json_group_array(json_array(workspace_id, term)) FROM (SELECT workspace_id, term FROM name_terms t
           WHERE t.record_id = r.id ORDER BY workspace_id, term)) AS entries,
         (SELECT json_group_array(json_array(workspace_id, key, value)) FROM (SELECT workspace_id, key, value
           FROM record_sort s WHERE s.record_id = r.id AND s.key NOT IN ('f:holders', 'f:partnered')
           ORDER BY workspace_id, key, value)) AS sorts,
         (SELECT json_group_array(json_array(field, unique_key)) FROM (SELECT field, unique_key FROM record_index i
           WHERE i.record_id = r.id AND i.role <> 4 ORDER BY field)) AS indexed
       FROM records r WHERE r.id >= ? AND r.id < ? ORDER BY r.id`,
    )
    .all(...blockOf({ d1, referenceFields, ...tenant })) as Record<string, string | number>[];
  for (const row of rows) {
    const values = JSON.parse(String(row.field_values)) as { fieldName: string; value: unknown }[];
    const keys = recordKeys(String(row.name), values);
    const at = `record ${row.id}`;
    if (row.name_key !== keys.nameKey || row.terms !== keys.terms || row.folds !== keys.folds)
      violations.push(`${at}: its stored keys differ from the Worker's`);
    const workspaces = (JSON.parse(String(row.workspaces)) as number[]).sort((a, b) => a - b);
    const terms = JSON.parse(keys.terms) as string[];
    // Only live records are found by their terms.
    const live = row.deleted === 0;
    const entries = live ? workspaces.flatMap((w) => [...terms].sort().map((term) => [w, term])) : [];
    if (JSON.stringify(JSON.parse(String(row.entries))) !== JSON.stringify(entries))
      violations.push(`${at}: its search terms per workspace differ from its terms`);
    const code = values.find((v) => v.fieldName === 'code')?.value;
    const indexed = [
      ['c', row.created_at],
      ['n', row.name],
      ['o', row.object_id],
      ['u', row.updated_at],
    ] as [string, unknown][];
    if (code !== undefined && code !== null) indexed.splice(1, 0, ['f:code', code]);
    // A reference keeps a key per id it holds, live or deleted.
    for (const field of referenceFields)
      if (field.objectId === row.object_id)
        for (const id of idsOf(values.find((v) => v.fieldName === field.name)?.value))
          indexed.push([`f:${field.name}`, id]);
    indexed.sort(([k1, v1], [k2, v2]) => (k1 === k2 ? Number(v1) - Number(v2) : k1 < k2 ? -1 : 1));
    const sorts = workspaces.flatMap((w) => indexed.map(([key, value]) => [w, key, value]));
    if (JSON.stringify(JSON.parse(String(row.sorts))) !== JSON.stringify(sorts))
      violations.push(`${at}: its sort keys per workspace differ from its columns`);
    const unique = typeof code === 'string' && row.deleted === 0 ? foldCase(code) : null;
    const index = JSON.parse(String(row.indexed)) as [string, unknown][];
    if (JSON.stringify(index) !== JSON.stringify(code === undefined ? [] : [['code', unique]]))
      violations.push(`${at}: its unique key differs from the fold of its code`);
  }
  return violations;
}

/**
 * The invariants, over the feed and every answer heard: each record's versions consecutive and
 * distinct from 1; every record answered equal to the feed's state at its version; every
 * acknowledged write present exactly once; nothing answered failed present at all.
 */
function checkHistory(
  feed: readonly any[],
  attempts: readonly Attempt[],
  workspaces: readonly { id: number; name: string }[],
): string[] {
  const violations: string[] = [];
  const versions = new Map<number, number>();
  for (const item of feed) {
    const expected = (versions.get(item.recordId) ?? 0) + 1;
    if (item.version !== expected)
      violations.push(`record ${item.recordId}: feed version ${item.version} after ${expected - 1}`);
    versions.set(item.recordId, item.version);
  }
  const states = statesOf(feed);
  // How often each title token was written: a change (a creation included) after which the
  // record holds it and before which it did not.
  const written = new Map<string, number>();
  const before = new Map<number, any>();
  for (const item of feed) {
    const id = item.recordId as number;
    const state = states.get(`${id}@${item.version}`);
    const title = state?.fieldValues.title;
    if (typeof title === 'string' && title.startsWith('Ét') && before.get(id)?.fieldValues.title !== title)
      written.set(title, (written.get(title) ?? 0) + 1);
    before.set(id, state);
  }
  // A workspace's name is the token of the admin write that made it: written once per row.
  for (const { name } of workspaces) written.set(name, (written.get(name) ?? 0) + 1);
  for (const attempt of attempts)
    if (attempt.op.startsWith('workspace') && attempt.status === 201) {
      const { id, name } = JSON.parse(attempt.text) as { id: number; name: string };
      if (!workspaces.some((w) => w.id === id && w.name === name))
        violations.push(`workspace answered as ${id} ${name}, which the database does not hold`);
    }
  for (const [token, count] of written)
    if (count > 1) violations.push(`token ${token} written ${count} times (a write applied twice)`);
  for (const attempt of attempts)
    for (const record of answeredRecords(attempt)) {
      const whole = states.get(`${record.id}@${record.version}`);
      // A member's answers hold the state without the field their role hides.
      const state = attempt.token === attempt.tenant.memberKey && whole !== undefined ? withoutFlag(whole) : whole;
      if (!sameState(record, state) && process.env.SIM_DEBUG)
        process.stderr.write(JSON.stringify({ record, state }) + '\n');
      if (!sameState(record, state))
        violations.push(
          `${attempt.op} answered record ${record.id} v${record.version}, which the feed does not hold as answered`,
        );
    }
  // An operation: every attempt under one key, or one unkeyed attempt (its values are its own).
  const operations = operationsOf(attempts);
  // No key is revoked in a run: a 401 is a request that lost its tenant (a move's stale route).
  for (const attempt of attempts)
    if (attempt.status === 401) violations.push(`${attempt.op} answered 401: ${attempt.text.slice(0, 200)}`);
  for (const attempt of attempts)
    if (attempt.status >= 500 && attempt.status !== 503)
      violations.push(`${attempt.op} answered ${attempt.status}: ${attempt.text.slice(0, 200)}`);
  for (const [name, tries] of operations) {
    const succeeded = tries.filter((t) => t.status === 200 || t.status === 201);
    const unknown = tries.some(unsure);
    for (const token of (tries[0] as Attempt).tokens) {
      const count = written.get(token) ?? 0;
      if (succeeded.length > 0 && count !== 1)
        violations.push(`${name} ${token}: answered ${(succeeded[0] as Attempt).status} but written ${count} times`);
      if (succeeded.length === 0 && !unknown && count !== 0)
        violations.push(
          `${name} ${token}: answered ${tries.map((t) => t.status).join(', ')} but written ${count} times`,
        );
    }
    // Once a key has succeeded, it answers that, byte for byte, whatever happens since.
    const first = succeeded[0];
    if (first === undefined) continue;
    for (const later of tries.slice(tries.indexOf(first) + 1))
      if (final(later) && (later.status !== first.status || later.text !== first.text))
        violations.push(
          `${name}: answered ${first.status} ${first.text.slice(0, 100)}, ` +
            `then ${later.status} ${later.text.slice(0, 100)}`,
        );
  }
  return violations;
}

/** The records a 200 or 201 answered, in the order of the request's elements. */
function answeredRecords(attempt: Attempt): any[] {
  if ((attempt.status !== 200 && attempt.status !== 201) || attempt.op.startsWith('workspace')) return [];
  const body = JSON.parse(attempt.text) as any;
  return Array.isArray(body) ? body.map((item) => item.record) : [body];
}

/** An answer whose outcome the client cannot know: the write may have committed. */
function unsure(attempt: Attempt): boolean {
  return attempt.status >= 500 && (attempt.status !== 503 || unknownOutcome(attempt.text));
}

/** Every operation: its attempts under one key, or one unkeyed attempt (reads left out). */
function operationsOf(attempts: readonly Attempt[]): Map<string, Attempt[]> {
  const operations = new Map<string, Attempt[]>();
  attempts.forEach((attempt, i) => {
    if (attempt.op === 'read') return;
    const name = attempt.key ?? `attempt ${i}`;
    operations.set(name, [...(operations.get(name) ?? []), attempt]);
  });
  return operations;
}

/** The ids a reference value holds: one, or an array's. */
function idsOf(value: unknown): number[] {
  return Array.isArray(value) ? (value as number[]) : typeof value === 'number' ? [value] : [];
}

/** The reference refusal an answer names (`record_referenced`, `invalid_reference`), if any. */
function referenceRefusal(text: string): string | undefined {
  return /"(record_referenced|invalid_reference)"/.exec(text)?.[1];
}

/** The field values each element of a write sends, in the order its answer lists its records. */
function sentValues(attempt: Attempt): FieldValue[][] | undefined {
  const body = attempt.request.body as any;
  if (body === undefined || body === null || attempt.op.startsWith('workspace')) return undefined;
  if (Array.isArray(body)) return body.map((element) => (element.fieldValues ?? []) as FieldValue[]);
  if (Array.isArray(body.items)) return body.items.map((item: any) => item.fieldValues as FieldValue[]);
  if (Array.isArray(body.fieldValues)) return [body.fieldValues as FieldValue[]];
  return undefined;
}

/** The record a delete or restore names, from its request. */
function lifecycleOf(attempt: Attempt): { recordId: number; type: 'deleted' | 'restored' } | undefined {
  const { method, path } = attempt.request;
  const match = /\/records\/(\d+)(\/restore)?$/.exec(path);
  if (match === null || (method === 'DELETE') === (match[2] !== undefined)) return undefined;
  return { recordId: Number(match[1]), type: match[2] === undefined ? 'deleted' : 'restored' };
}

/**
 * References, as stored: no live record holds a restricting reference to a deleted (or missing)
 * record, whether read from the index of references or from the records' values; every value
 * names records of its target (one id, or 1 to 100 distinct ids); and the index of references
 * holds exactly what the values of live and deleted records hold.
 */
function checkReferences(tenant: Tenant): string[] {
  const { d1, referenceFields } = tenant;
  const [lo, hi] = blockOf(tenant);
  const violations: string[] = [];
  const dangling = d1.db
    .prepare(
      `SELECT r.record_id, r.field, r.target_id FROM record_refs r
         JOIN records s ON s.id = r.record_id AND s.deleted = 0
         JOIN reference_fields f ON f.object_id = r.object_id AND f.name = r.field AND f.on_delete = 'restrict'
         LEFT JOIN records t ON t.id = r.target_id
       WHERE (t.id IS NULL OR t.deleted = 1) AND r.record_id >= ? AND r.record_id < ?`,
    )
    .all(lo, hi) as { record_id: number; field: string; target_id: number }[];
  for (const row of dangling)
    violations.push(`live record ${row.record_id} references deleted record ${row.target_id} by ${row.field}`);
  const rows = d1.db
    .prepare(`SELECT id, object_id, deleted, field_values FROM records WHERE id >= ? AND id < ? ORDER BY id`)
    .all(lo, hi) as {
    id: number;
    object_id: number;
    deleted: number;
    field_values: string;
  }[];
  const byId = new Map(rows.map((row) => [row.id, row]));
  const expected = new Set<string>();
  for (const row of rows) {
    const values = JSON.parse(row.field_values) as FieldValue[];
    for (const field of referenceFields) {
      if (field.objectId !== row.object_id) continue;
      const value = values.find((v) => v.fieldName === field.name)?.value;
      if (value === undefined) continue;
      const at = `record ${row.id}${row.deleted ? ' (deleted)' : ''} ${field.name}`;
      const ids = idsOf(value);
      const shaped = field.multiple
        ? Array.isArray(value) && ids.length >= 1 && ids.length <= 100 && new Set(ids).size === ids.length
        : typeof value === 'number';
      if (!shaped || !ids.every(Number.isSafeInteger)) violations.push(`${at} holds ${JSON.stringify(value)}`);
      for (const id of ids) {
        expected.add(`${row.id} ${field.name} ${id} ${row.object_id}`);
        const target = byId.get(id);
        if (target === undefined || target.object_id !== field.target)
          violations.push(`${at} names ${id}, no record of object ${field.target}`);
        else if (row.deleted === 0 && field.onDelete === 'restrict' && target.deleted === 1)
          violations.push(`${at} names deleted record ${id} (from its values)`);
      }
    }
  }
  const held = new Set(
    (
      d1.db
        .prepare(
          `SELECT record_id, field, target_id, object_id FROM record_refs WHERE record_id >= ? AND record_id < ?`,
        )
        .all(lo, hi) as {
        record_id: number;
        field: string;
        target_id: number;
        object_id: number;
      }[]
    ).map((r) => `${r.record_id} ${r.field} ${r.target_id} ${r.object_id}`),
  );
  const missing = [...expected].filter((ref) => !held.has(ref));
  const extra = [...held].filter((ref) => !expected.has(ref));
  if (missing.length > 0) violations.push(`record_refs lacks references the values hold: ${missing.join(', ')}`);
  if (extra.length > 0) violations.push(`record_refs holds references no value holds: ${extra.join(', ')}`);
  return violations;
}

/**
 * No live record references a deleted one by a restricting field at any point of the history:
 * after each change of the feed (in the order they committed), folded from the start.
 */
function referencesInFeed(feed: readonly any[], referenceFields: readonly ReferenceField[]): string[] {
  const violations: string[] = [];
  const restricting = referenceFields.filter((field) => field.onDelete === 'restrict');
  const states = new Map<number, any>();
  const targets = (state: any, field: ReferenceField): number[] =>
    state.objectId === field.objectId ? idsOf(state.fieldValues[field.name]) : [];
  for (const item of feed) {
    const state = foldItem(states.get(item.recordId), item);
    states.set(item.recordId, state);
    const at = `after record ${item.recordId} v${item.version} ${item.type}`;
    if (!state.deleted)
      for (const field of restricting)
        for (const id of targets(state, field))
          if (id !== state.id && states.get(id)?.deleted !== false)
            violations.push(`${at}: it references ${id} by ${field.name}, which is not live`);
    if (item.type === 'deleted')
      for (const other of states.values())
        for (const field of restricting)
          if (!other.deleted && other.id !== state.id && targets(other, field).includes(state.id))
            violations.push(`${at}: live record ${other.id} references it by ${field.name}`);
  }
  return violations;
}

/**
 * Every answer, as it bears on references: a 200 or 201 holds what its elements sent (a null
 * clears a field), a delete answered deleted and a restore live; only a delete is refused as
 * `record_referenced`, and only a write that sends a reference or a restore as `invalid_reference`;
 * a 422 names at least one problem.
 */
function checkAnswers(attempts: readonly Attempt[]): string[] {
  const violations: string[] = [];
  for (const attempt of attempts) {
    const what = `${attempt.op} ${attempt.request.method} ${attempt.request.path}`;
    const refusal = referenceRefusal(attempt.text);
    const lifecycle = lifecycleOf(attempt);
    const sent = sentValues(attempt);
    if (attempt.status >= 400 && refusal === 'record_referenced' && lifecycle?.type !== 'deleted')
      violations.push(`${what}: answered ${attempt.status} record_referenced`);
    const references = (sent ?? []).some((values) =>
      values.some((v) => (v.fieldName === 'company' || v.fieldName === 'partners') && v.value !== null),
    );
    if (attempt.status >= 400 && refusal === 'invalid_reference' && lifecycle?.type !== 'restored' && !references)
      violations.push(`${what}: answered ${attempt.status} invalid_reference, but it sends no reference`);
    // A refusal of the request says what it refuses.
    if (attempt.status === 422 && !((JSON.parse(attempt.text) as { errors?: unknown[] }).errors?.length ?? 0))
      violations.push(`${what}: answered 422 naming no problem: ${attempt.text.slice(0, 200)}`);
    const records = answeredRecords(attempt);
    if (records.length === 0) continue;
    if (lifecycle !== undefined) {
      const record = records[0];
      if (record?.id !== lifecycle.recordId || record.deleted !== (lifecycle.type === 'deleted'))
        violations.push(`${what}: answered ${attempt.status} with ${attempt.text.slice(0, 200)}`);
      continue;
    }
    if (sent === undefined) continue;
    if (records.length !== sent.length) {
      violations.push(`${what}: ${sent.length} elements answered with ${records.length} records`);
      continue;
    }
    records.forEach((record, i) => {
      const held = byName(record).fieldValues as Record<string, unknown>;
      for (const { fieldName, value } of sent[i] as FieldValue[])
        if (JSON.stringify(held[fieldName] ?? null) !== JSON.stringify(value))
          violations.push(
            `${what}: answered record ${record.id} with ${fieldName} ${JSON.stringify(held[fieldName])}, ` +
              `sent ${JSON.stringify(value)}`,
          );
    });
  }
  return violations;
}

/**
 * Each delete and restore in the feed was made by an operation on that record that was answered
 * 200 or whose outcome its client could not know, sent before the change was made and (if it
 * was answered 200) answered after: each such operation made at most one. So a delete refused
 * (`record_referenced`, say) and a restore refused (`invalid_reference`) changed nothing. A
 * change is timed when it was computed, or at its record's previous change if that is later
 * (setup's changes, for a run's first ones).
 */
function checkLifecycle(feed: readonly any[], attempts: readonly Attempt[], setupEnd: number): string[] {
  const violations: string[] = [];
  interface Candidate {
    recordId: number;
    type: 'deleted' | 'restored';
    from: number;
    until: number;
  }
  const candidates: Candidate[] = [];
  const tried = new Map<string, string[]>();
  for (const [name, tries] of operationsOf(attempts)) {
    const lifecycle = lifecycleOf(tries[0] as Attempt);
    if (lifecycle === undefined) continue;
    const at = `${lifecycle.type} ${lifecycle.recordId}`;
    tried.set(at, [...(tried.get(at) ?? []), `${name}: ${tries.map((t) => t.status).join(' ')}`]);
    const succeeded = tries.find((t) => t.status === 200 || t.status === 201);
    const unknown = tries.some(unsure);
    if (succeeded === undefined && !unknown) continue;
    candidates.push({
      ...lifecycle,
      from: Math.floor(Math.min(...tries.map((t) => t.sentAt))),
      until: unknown ? Infinity : Math.ceil((succeeded as Attempt).answeredAt),
    });
  }
  const used = new Set<Candidate>();
  const changes = feed.filter((item) => item.type === 'deleted' || item.type === 'restored');
  for (const item of [...changes].sort((a, b) => a.at - b.at)) {
    const at = (item.at as number) - EPOCH;
    const fits = candidates
      .filter((op) => !used.has(op) && op.recordId === item.recordId && op.type === item.type)
      .filter((op) => op.from <= at && at <= Math.max(op.until, setupEnd))
      .sort((a, b) => a.until - b.until);
    const chosen = fits[0];
    if (chosen !== undefined) used.add(chosen);
    else
      violations.push(
        `record ${item.recordId} v${item.version} ${item.type} at ${at} by no operation answered 200 or unknown ` +
          `(${(tried.get(`${item.type} ${item.recordId}`) ?? []).join('; ')})`,
      );
  }
  return violations;
}

/** A completed key naming a ledger row that is gone: its replay could not be answered. */
function orphanKeys(d1: SqliteD1): number {
  const row = d1.db
    .prepare(
      `SELECT count(*) AS n FROM idempotency_keys k WHERE k.state = 'done' AND k.write_id IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM writes w WHERE w.id = k.write_id)`,
    )
    .get() as { n: number };
  return row.n;
}

/**
 * The Cron Trigger's pruning, with the clock moved on: just short of a day, every key that
 * succeeded still replays byte for byte and no completed key names a pruned ledger row; past
 * 25 hours keys and ledger rows are gone, the feed is whole (changes are kept 7 days), and a
 * key sent again is a new request that gets a final answer.
 */
async function checkPruning(
  world: World,
  cluster: Cluster,
  tenants: readonly Tenant[],
  attempts: Attempt[],
  check: (
    token: string,
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ) => Promise<Answer>,
  feeds: ReadonlyMap<Tenant, readonly unknown[]>,
): Promise<string[]> {
  const violations: string[] = [];
  const databases = Object.values(cluster.databases);
  const advance = async (ms: number): Promise<void> => {
    const waited = world.sleep(ms);
    await world.run(ms + 1);
    await waited;
    const pruned = cluster.scheduled();
    await world.run();
    await pruned;
  };
  const firstSuccess = new Map<string, Attempt>();
  for (const attempt of attempts)
    if (
      attempt.key !== undefined &&
      !firstSuccess.has(attempt.key) &&
      (attempt.status === 200 || attempt.status === 201)
    )
      firstSuccess.set(attempt.key, attempt);
  await advance(KEY_TTL_MS - world.between(60, 90) * 60_000);
  const orphans = databases.reduce((n, d1) => n + orphanKeys(d1), 0);
  if (orphans > 0) violations.push(`after pruning at 23 h: ${orphans} completed keys name no ledger row`);
  for (const [key, first] of firstSuccess) {
    const { method, path, body, headers } = first.request;
    const answer = await check(first.token, method, path, body, headers);
    if (answer.status !== first.status || answer.text !== first.text)
      violations.push(
        `key ${key} after pruning at 23 h: answered ${first.status} ${first.text.slice(0, 100)}, ` +
          `then ${answer.status} ${answer.text.slice(0, 100)}`,
      );
  }
  // Past the ledger's retention, counted from the run's start (the first writes).
  await advance(Math.max(1, LEDGER_TTL_MS + 60 * 60_000 - world.now));
  for (const d1 of databases) {
    const left = d1.db
      .prepare(`SELECT (SELECT count(*) FROM idempotency_keys) AS keys, (SELECT count(*) FROM writes) AS ledger`)
      .get() as { keys: number; ledger: number };
    if (left.keys > 0 || left.ledger > 0)
      violations.push(`after pruning past 25 h: ${left.keys} keys and ${left.ledger} ledger rows left`);
  }
  for (const tenant of tenants) {
    const feedLength = feeds.get(tenant)?.length ?? 0;
    const page = await check(tenant.key, 'GET', `/workspaces/${tenant.workspace}/changes?limit=100`);
    const items = (page.body as { items?: unknown[] } | undefined)?.items?.length ?? -1;
    if (page.status !== 200 || items !== Math.min(100, feedLength))
      violations.push(
        `after pruning past 25 h: tenant ${tenant.id}'s feed answered ${page.status} with ${items} of ` +
          `${feedLength} changes`,
      );
  }
  for (const [key, first] of firstSuccess) {
    const { method, path, body, headers } = first.request;
    const answer = await check(first.token, method, path, body, headers);
    if (answer.status >= 500 || (answer.status === 409 && answer.retryAfter))
      violations.push(`key ${key} sent again after it expired: ${answer.status} ${answer.text.slice(0, 200)}`);
  }
  return violations;
}

/** A record's state as a member whose role hides `flag` sees it. */
function withoutFlag(state: { fieldValues: Record<string, unknown> }): unknown {
  const { flag: _, ...fieldValues } = state.fieldValues;
  return { ...state, fieldValues };
}
