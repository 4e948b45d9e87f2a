/**
 * `npm run bench`: the service against a bare baseline Worker (test/bench/baseline) that does only
 * the storage work of each operation. Both run locally under wrangler dev with fresh state and
 * are driven by autocannon, alternating service and baseline to cancel drift. Prints a table and
 * writes it to test/bench/results.md.
 */
import autocannon from 'autocannon';
import { execSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { startLocalWorker, type LocalWorker } from '../e2e/server.ts';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const RECORDS = 1000;
/** Runs only the scenarios whose name contains this text (all by default). */
const ONLY = process.env.BENCH_ONLY ?? '';
const ADMIN = 'bench-admin-token';
const RESULTS = fileURLToPath(new URL('./results.md', import.meta.url));

interface Target {
  url: string;
  headers: Record<string, string>;
  ids: number[];
  /** Path of one-record patches; `{id}` is replaced. */
  patchPath: string;
  patchBody: (value: number) => unknown;
  batchBody: (ids: number[], value: number) => unknown;
  createBody: unknown;
}

interface Scenario {
  name: string;
  recordsPerRequest: number;
  /** A fixed number of requests instead of a duration, so that every answer is received. */
  amount?: number;
  request: (target: Target, counter: () => number, versions: number[]) => autocannon.Request;
}

const pick = (ids: number[], n: number): number[] => {
  const chosen = new Set<number>();
  while (chosen.size < n) chosen.add(ids[Math.floor(Math.random() * ids.length)] as number);
  return [...chosen];
};

const scenarios: Scenario[] = [
  {
    name: 'create-20',
    recordsPerRequest: 20,
    request: (t) => ({ method: 'POST', path: '/records/batch', body: JSON.stringify(t.createBody) }),
  },
  {
    name: 'patch-1 (1000 records)',
    recordsPerRequest: 1,
    request: (t, next) => ({
      method: 'PATCH',
      setupRequest: (req) => {
        const value = next();
        return { ...req, path: t.patchPath.replace('{id}', String(pick(t.ids, 1)[0])), body: JSON.stringify(t.patchBody(value)) };
      },
    }),
  },
  {
    name: 'batch-patch-20',
    recordsPerRequest: 20,
    request: (t, next) => ({
      method: 'PATCH',
      path: '/records/batch',
      setupRequest: (req) => ({ ...req, body: JSON.stringify(t.batchBody(pick(t.ids, 20), next())) }),
    }),
  },
  {
    name: 'hot record',
    recordsPerRequest: 1,
    amount: Number(process.env.BENCH_HOT_AMOUNT ?? 2000),
    request: (t, next, versions) => ({
      method: 'PATCH',
      path: t.patchPath.replace('{id}', String(t.ids[0])),
      setupRequest: (req) => ({ ...req, body: JSON.stringify(t.patchBody(next())) }),
      onResponse: (status, body) => {
        if (status === 200) versions.push((JSON.parse(body) as { version?: number }).version ?? -1);
      },
    }),
  },
];

async function json(url: string, method: string, headers: Record<string, string>, body?: unknown): Promise<any> {
  const res = await fetch(url, { method, headers: { ...headers, 'Content-Type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? undefined : res.json();
}

async function serviceTarget(worker: LocalWorker): Promise<Target> {
  const admin = { Authorization: `Bearer ${ADMIN}` };
  const user = await json(`${worker.url}/admin/users`, 'POST', admin, { name: 'bench' });
  const { key } = await json(`${worker.url}/admin/users/${user.id}/keys`, 'POST', admin);
  const ws = await json(`${worker.url}/admin/workspaces`, 'POST', admin, { name: 'bench' });
  await json(`${worker.url}/admin/workspaces/${ws.id}/members/${user.id}`, 'PUT', admin, { role: 'editor' });
  const object = await json(`${worker.url}/admin/objects`, 'POST', admin, { name: 'Bench', workspaceIds: [ws.id], fields: [{ name: 'n0', type: 'integer' }] });
  const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
  const createBody = Array.from({ length: 20 }, (_, i) => ({ objectId: object.id, fieldValues: [{ fieldName: 'n0', value: i }] }));
  const ids: number[] = [];
  while (ids.length < RECORDS) ids.push(...(await json(`${worker.url}/records/batch`, 'POST', headers, createBody)).map((item: any) => item.record.id));
  return {
    url: worker.url,
    headers,
    ids,
    patchPath: `/workspaces/${ws.id}/records/{id}`,
    patchBody: (value) => ({ fieldValues: [{ fieldName: 'n0', value }] }),
    batchBody: (batch, value) => batch.map((id) => ({ id, fieldValues: [{ fieldName: 'n0', value }] })),
    createBody,
  };
}

async function baselineTarget(worker: LocalWorker): Promise<Target> {
  await json(`${worker.url}/setup`, 'POST', {});
  return {
    url: worker.url,
    headers: { 'Content-Type': 'application/json' },
    ids: Array.from({ length: RECORDS }, (_, i) => i + 1),
    patchPath: '/records/{id}',
    patchBody: (value) => ({ value }),
    batchBody: (ids, value) => ({ ids, value }),
    createBody: {},
  };
}

interface Totals {
  requests: number;
  ok: number;
  bad: number;
  seconds: number;
  p50: number[];
  p99: number[];
}

/**
 * One autocannon run, timed here from its start to its last answer: autocannon's own duration,
 * and its end, fall on whole seconds.
 */
async function drive(target: Target, scenario: Scenario, counter: () => number, versions: number[] = []): Promise<{ result: autocannon.Result; seconds: number }> {
  const start = performance.now();
  let last = start;
  const run = autocannon({
    url: target.url,
    connections: CONNECTIONS,
    ...(scenario.amount === undefined ? { duration: SECONDS } : { amount: scenario.amount }),
    headers: target.headers,
    requests: [scenario.request(target, counter, versions)],
  }) as unknown as Promise<autocannon.Result> & autocannon.Instance;
  run.on('response', () => (last = performance.now()));
  const result = await run;
  return { result, seconds: (last - start) / 1000 };
}

function add(totals: Totals, { result, seconds }: { result: autocannon.Result; seconds: number }): void {
  totals.requests += result.requests.total;
  totals.ok += result['2xx'];
  totals.bad += result.non2xx + result.errors + result.timeouts;
  totals.seconds += seconds;
  totals.p50.push(result.latency.p50);
  totals.p99.push(result.latency.p99);
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1);
const empty = (): Totals => ({ requests: 0, ok: 0, bad: 0, seconds: 0, p50: [], p99: [] });

async function hotVersion(target: Target): Promise<number> {
  const record = await json(`${target.url}/records/${target.ids[0]}`, 'GET', target.headers);
  return record.version;
}

/**
 * Patches every record once, one by one, before each patch scenario: a record's first patch
 * instantiates its Durable Object (under wrangler dev several times the cost of a warm call)
 * and lets it learn the record's state, as the object of any record in use has, and the Worker
 * remember its facts (which it forgets after 30 s). The baseline gets the same pass.
 */
async function warmUp(target: Target): Promise<void> {
  for (let i = 0; i < target.ids.length; i += 16) {
    await Promise.all(target.ids.slice(i, i + 16).map((id) => json(`${target.url}${target.patchPath.replace('{id}', String(id))}`, 'PATCH', target.headers, target.patchBody(0))));
  }
}

async function main(): Promise<void> {
  console.log(`Starting the service and the baseline (wrangler dev, fresh state)…`);
  const [service, baseline] = await Promise.all([
    // The bench drives one key far past any sane per-key limit: it measures the service, not the limiter.
    startLocalWorker({ vars: { ADMIN_TOKEN: ADMIN, RATE_LIMITS: 'off' } }),
    startLocalWorker({ config: fileURLToPath(new URL('./baseline/wrangler.toml', import.meta.url)) }),
  ]);
  const lines: string[] = [];
  const loud: string[] = [];
  try {
    const [s, b] = await Promise.all([serviceTarget(service), baselineTarget(baseline)]);
    let value = 0;
    const counter = () => ++value;
    const rows: string[][] = [];
    let hotAccounted = '';
    for (const scenario of scenarios.filter((one) => one.name.includes(ONLY))) {
      if (scenario.name !== 'create-20') await Promise.all([warmUp(s), warmUp(b)]);
      const totals = { service: empty(), baseline: empty() };
      const hotBefore = scenario.amount !== undefined ? await hotVersion(s) : 0;
      const versions: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        add(totals.service, await drive(s, scenario, counter, versions));
        add(totals.baseline, await drive(b, scenario, counter));
      }
      if (scenario.amount !== undefined) {
        // Every answered version is distinct, they run without a gap from the version before the
        // run, and the stored version is the last of them: no patch lost, none counted twice.
        const after = await hotVersion(s);
        const sorted = [...versions].sort((x, y) => x - y);
        const exact = sorted.length === totals.service.ok && sorted.every((v, i) => v === hotBefore + 1 + i) && after === hotBefore + sorted.length;
        hotAccounted = `hot record: ${totals.service.ok} successful patches, answered versions ${sorted[0]}–${sorted.at(-1)}, stored version ${after}: ${exact ? 'every version accounted for' : 'MISMATCH'}`;
        if (!exact) loud.push(hotAccounted);
      }
      const rate = (t: Totals) => t.requests / Math.max(t.seconds, 1e-9);
      for (const [who, t] of [['service', totals.service], ['baseline', totals.baseline]] as const) {
        if (t.bad > 0) loud.push(`${scenario.name} / ${who}: ${t.bad} non-2xx answers or errors`);
      }
      rows.push([
        scenario.name,
        rate(totals.service).toFixed(0),
        rate(totals.baseline).toFixed(0),
        (rate(totals.service) * scenario.recordsPerRequest).toFixed(0),
        `${mean(totals.service.p50).toFixed(0)} / ${mean(totals.service.p99).toFixed(0)}`,
        `${mean(totals.baseline.p50).toFixed(0)} / ${mean(totals.baseline.p99).toFixed(0)}`,
        `${totals.service.bad} / ${totals.baseline.bad}`,
        (rate(totals.service) / Math.max(rate(totals.baseline), 1e-9)).toFixed(2),
      ]);
    }
    const cpu = cpus()[0]?.model ?? 'unknown CPU';
    lines.push(`# Benchmark: service vs bare baseline`, '');
    lines.push(`${new Date().toISOString()} · ${cpus().length} × ${cpu} · Node ${process.version} · wrangler ${version()} · ${CONNECTIONS} connections · ${ROUNDS} × ${SECONDS} s per side, alternating, every record patched once (singly) before each patch scenario`, '');
    lines.push('| scenario | service req/s | baseline req/s | service records/s | service p50 / p99 ms | baseline p50 / p99 ms | errors (service / baseline) | ratio |');
    lines.push('|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const row of rows) lines.push(`| ${row.join(' | ')} |`);
    lines.push('', hotAccounted);
  } finally {
    await Promise.all([service.stop(), baseline.stop()]);
  }
  if (loud.length > 0) lines.push('', '**Problems:**', ...loud.map((l) => `- ${l}`));
  const table = lines.join('\n') + '\n';
  writeFileSync(RESULTS, table);
  console.log('\n' + table);
  for (const line of loud) console.error(`!!! ${line}`);
  if (loud.length > 0) process.exitCode = 1;
}

function version(): string {
  try {
    return execSync(`"${process.execPath}" node_modules/wrangler/bin/wrangler.js --version`, { encoding: 'utf8' }).trim();
  } catch {
    return '?';
  }
}

await main();
