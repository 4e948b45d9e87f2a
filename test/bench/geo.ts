/**
 * `npm run bench:geo`: edge latency in long-haul round trips. The service (its chaos build, with
 * no faults) and the bare baseline run under the same binding wrappers, which add GEO_FAR_MS each
 * way to every call between the Worker and D1 or a record object (the Worker stands near the
 * client, far from D1) and GEO_NEAR_MS each way to an object's calls to D1 (objects stand near
 * D1, as the location hint places them). Each operation runs warm and cold, sequentially from one
 * client and then over 8 connections; latency is printed as p50 / p99 ÷ (2 · GEO_FAR_MS), so the
 * bare Worker, one D1 round trip per operation, is about 1.0 by construction. A third run gives
 * the service a read replica near the Worker, GEO_REPLICA_LAG_MS behind the primary
 * (test/chaos/replica.ts): reads without a bookmark are served there. Writes the table to
 * test/bench/geo-results.md.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startLocalWorker } from '../e2e/server.ts';
import { ADMIN, baselineTarget, freshRecords, serviceTarget, warmUp, type Target } from './targets.ts';

const FAR = Number(process.env.GEO_FAR_MS ?? 75);
const NEAR = Number(process.env.GEO_NEAR_MS ?? 1);
const LAG = Number(process.env.GEO_REPLICA_LAG_MS ?? 500);
const SEQUENTIAL = Number(process.env.GEO_SEQUENTIAL ?? 12);
const CONCURRENT = 8;
const PER_CONNECTION = Number(process.env.GEO_PER_CONNECTION ?? 5);
const RECORDS = 200;
/** Runs only the operations whose name contains this text (all by default; then nothing is saved). */
const ONLY = process.env.GEO_ONLY ?? '';
const RESULTS = fileURLToPath(new URL('./geo-results.md', import.meta.url));

interface Operation {
  name: string;
  /** Records whose objects must not have been used yet, when the operation runs cold. */
  cold?: boolean;
  /** Records each request takes (cold: fresh ones). */
  perRequest?: number;
  /** Never the same record twice (warm records, each used once). */
  unique?: boolean;
  send: (target: Target, id: () => number, value: number) => Promise<Response>;
}

const ask = (t: Target, method: string, path: string, body?: unknown, extra: Record<string, string> = {}) =>
  fetch(`${t.url}${path}`, {
    method,
    headers: { ...t.headers, ...extra },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

const operations: Operation[] = [
  { name: 'create-20', send: (t) => ask(t, 'POST', '/records/batch', t.createBody) },
  { name: 'read', send: (t, id) => ask(t, 'GET', `/records/${id()}`) },
  {
    name: 'patch-1 warm',
    send: (t, id, v) => ask(t, 'PATCH', t.patchPath.replace('{id}', String(id())), t.patchBody(v)),
  },
  {
    name: 'patch-1 warm + Idempotency-Key',
    send: (t, id, v) =>
      ask(t, 'PATCH', t.patchPath.replace('{id}', String(id())), t.patchBody(v), {
        'Idempotency-Key': crypto.randomUUID(),
      }),
  },
  {
    name: 'patch-1 cold',
    cold: true,
    send: (t, id, v) => ask(t, 'PATCH', t.patchPath.replace('{id}', String(id())), t.patchBody(v)),
  },
  {
    name: 'create-20 + Idempotency-Key',
    send: (t) => ask(t, 'POST', '/records/batch', t.createBody, { 'Idempotency-Key': crypto.randomUUID() }),
  },
  {
    name: 'batch-patch-20 warm',
    send: (t, _id, v) => ask(t, 'PATCH', '/records/batch', t.batchBody(distinct(t.ids, 20), v)),
  },
  {
    name: 'batch-patch-20 warm + Idempotency-Key',
    send: (t, _id, v) =>
      ask(t, 'PATCH', '/records/batch', t.batchBody(distinct(t.ids, 20), v), {
        'Idempotency-Key': crypto.randomUUID(),
      }),
  },
  {
    name: 'batch-patch-20 cold',
    cold: true,
    perRequest: 20,
    send: (t, id, v) => ask(t, 'PATCH', '/records/batch', t.batchBody(Array.from({ length: 20 }, id), v)),
  },
  {
    name: 'list-50',
    send: (t) =>
      ask(
        t,
        'GET',
        t.workspacePath === undefined ? '/workspaces/1/records?after=0' : `${t.workspacePath}/records?limit=50`,
      ),
  },
  {
    name: 'query-50',
    send: (t) =>
      ask(
        t,
        'GET',
        t.workspacePath === undefined
          ? '/workspaces/1/records?after=0'
          : `${t.workspacePath}/records?limit=50&field.n0=0&objectId=${t.objectId ?? 0}`,
      ),
  },
  {
    name: 'changes-100',
    send: (t) =>
      ask(
        t,
        'GET',
        t.workspacePath === undefined ? '/workspaces/1/changes?after=0' : `${t.workspacePath}/changes?limit=100`,
      ),
  },
  // Last: it leaves records deleted. Each request deletes a record nobody deleted yet.
  { name: 'delete warm', unique: true, send: (t, id) => ask(t, 'DELETE', t.patchPath.replace('{id}', String(id()))) },
];

/** Latencies of `count` requests per connection over `connections` connections, in ms. */
async function measure(
  t: Target,
  op: Operation,
  ids: () => number,
  connections: number,
  count: number,
): Promise<number[]> {
  const latencies: number[] = [];
  let value = 1_000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      for (let i = 0; i < count; i++) {
        const start = performance.now();
        const res = await op.send(t, ids, ++value);
        await res.arrayBuffer();
        if (res.status >= 300) throw new Error(`${op.name}: ${res.status}`);
        latencies.push(performance.now() - start);
      }
    }),
  );
  return latencies.sort((a, b) => a - b);
}

function distinct(pool: readonly number[], n: number): number[] {
  const chosen = new Set<number>();
  while (chosen.size < n) chosen.add(pool[Math.floor(Math.random() * pool.length)] as number);
  return [...chosen];
}

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const trips = (ms: number): string => (ms / (2 * FAR)).toFixed(2);

/** Ids drawn without repeats from `pool`: a cold operation never touches a record twice. */
function drawer(pool: number[], unique: boolean): () => number {
  let next = 0;
  return () => (unique ? (pool[next++] as number) : (pool[Math.floor(Math.random() * pool.length)] as number));
}

async function main(): Promise<void> {
  const vars = { GEO_FAR_MS: String(FAR), GEO_NEAR_MS: String(NEAR) };
  console.log(
    `Starting the service (chaos build, no faults) and the baseline with GEO_FAR_MS=${FAR}, GEO_NEAR_MS=${NEAR}…`,
  );
  const chaosConfig = fileURLToPath(new URL('../chaos/wrangler.toml', import.meta.url));
  const [service, replicated, baseline] = await Promise.all([
    startLocalWorker({ config: chaosConfig, vars: { ADMIN_TOKEN: ADMIN, ...vars } }),
    startLocalWorker({
      config: chaosConfig,
      vars: { ADMIN_TOKEN: ADMIN, ...vars, GEO_REPLICA_LAG_MS: String(LAG) },
      replica: true,
    }),
    startLocalWorker({ config: fileURLToPath(new URL('./baseline/wrangler.toml', import.meta.url)), vars }),
  ]);
  const rows: string[] = [];
  /** p50 from one client, in long-haul round trips, by `${who} ${operation}`. */
  const p50s = new Map<string, number>();
  try {
    const [s, r, b] = await Promise.all([
      serviceTarget(service, RECORDS),
      serviceTarget(replicated, RECORDS),
      baselineTarget(baseline, RECORDS),
    ]);
    for (const op of operations.filter((one) => one.name.includes(ONLY))) {
      const cells = new Map<string, string>();
      for (const [who, target] of [
        ['service', s],
        ['replica', r],
        ['baseline', b],
      ] as const) {
        // The baseline has no objects: for it a cold patch is a warm one.
        const cold = op.cold === true && who !== 'baseline';
        const fresh = cold
          ? await freshRecords(target, (SEQUENTIAL + CONCURRENT * PER_CONNECTION) * (op.perRequest ?? 1))
          : [];
        if (!cold && !op.name.startsWith('create-20')) await warmUp(target);
        const pool = drawer(cold ? fresh : [...target.ids], true);
        for (const [connections, count] of [
          [1, SEQUENTIAL],
          [CONCURRENT, PER_CONNECTION],
        ] as const) {
          const ids = cold || op.unique === true ? pool : drawer(target.ids, false);
          const latencies = await measure(target, op, ids, connections, count);
          cells.set(`${who}${connections}`, `${trips(quantile(latencies, 0.5))} / ${trips(quantile(latencies, 0.99))}`);
          if (connections === 1) p50s.set(`${who} ${op.name}`, Number(trips(quantile(latencies, 0.5))));
        }
      }
      const columns = ['service1', 'replica1', 'baseline1', `service${CONCURRENT}`, `replica${CONCURRENT}`];
      rows.push(`| ${op.name} | ${[...columns, `baseline${CONCURRENT}`].map((k) => cells.get(k)).join(' | ')} |`);
      console.log(rows.at(-1));
    }
  } finally {
    await Promise.all([service.stop(), replicated.stop(), baseline.stop()]);
  }
  const table = [
    '# Geo simulation: latency in long-haul round trips',
    '',
    `${new Date().toISOString()} · GEO_FAR_MS=${FAR} (one long-haul round trip = ${2 * FAR} ms), ` +
      `GEO_NEAR_MS=${NEAR}, ` +
      `GEO_REPLICA_LAG_MS=${LAG} (the "+ replica" columns: a read replica near the Worker) · ` +
      `sequential: ${SEQUENTIAL} requests from one client; concurrent: ${CONCURRENT} connections × ` +
      `${PER_CONNECTION} · p50 / p99 ÷ ${2 * FAR} ms`,
    '',
    '| operation | service, 1 client | service + replica, 1 client | bare Worker, 1 client | service, 8 ' +
      'connections | service + replica, 8 connections | bare Worker, 8 connections |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
  ].join('\n');
  if (ONLY === '') writeFileSync(RESULTS, table);
  console.log('\n' + table);
  // Reads near the client cost a fraction of a long-haul trip; writes cost what they cost without a replica.
  const near = ['read', 'list-50', 'query-50'].filter((name) => p50s.has(`replica ${name}`));
  const far = near.filter((name) => (p50s.get(`replica ${name}`) ?? 0) > 0.3);
  console.log(
    far.length === 0
      ? `Reads with a near replica (${near.join(', ')}): p50 ≤ 0.3 long-haul round trips.`
      : `Reads with a near replica above 0.3 long-haul round trips at p50: ${far.join(', ')}.`,
  );
  if (far.length > 0) process.exitCode = 1;
}

await main();
