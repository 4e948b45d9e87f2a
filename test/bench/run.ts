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
import { startLocalWorker } from '../e2e/server.ts';
import { ADMIN, baselineTarget, freshRecords, json, serviceTarget, warmUp, type Target } from './targets.ts';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
/** Runs only the scenarios whose name contains this text (all by default). */
const ONLY = process.env.BENCH_ONLY ?? '';
const RECORDS = 1000;
/** Requests of one cold round: each needs a record of its own. */
const COLD_AMOUNT = Number(process.env.BENCH_COLD_AMOUNT ?? 1000);
const RESULTS = fileURLToPath(new URL('./results.md', import.meta.url));

interface Scenario {
  name: string;
  recordsPerRequest: number;
  /** A fixed number of requests instead of a duration, so that every answer is received. */
  amount?: number;
  /** Each request patches a record whose object nobody used yet (the service's records only). */
  cold?: boolean;
  /** Every answered version of the one record is checked against the stored one. */
  counted?: boolean;
  /** Needs 10 000 records (and their changes) and the cursors of every page. */
  lists?: boolean;
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
        return {
          ...req,
          path: t.patchPath.replace('{id}', String(pick(t.ids, 1)[0])),
          body: JSON.stringify(t.patchBody(value)),
        };
      },
    }),
  },
  {
    // A record's first patch: its object starts, and neither it nor the isolate knows the record.
    name: 'patch-1-cold',
    recordsPerRequest: 1,
    cold: true,
    amount: COLD_AMOUNT,
    request: (t, next) => ({
      method: 'PATCH',
      setupRequest: (req) => {
        const id = t.fresh?.pop() ?? pick(t.ids, 1)[0];
        return { ...req, path: t.patchPath.replace('{id}', String(id)), body: JSON.stringify(t.patchBody(next())) };
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
    counted: true,
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
  {
    name: 'list-50 (10 000 records)',
    recordsPerRequest: 50,
    lists: true,
    request: (t) => ({
      method: 'GET',
      setupRequest: (req) => ({ ...req, path: randomPage(t, 'records') }),
    }),
  },
  {
    name: 'changes-100',
    recordsPerRequest: 100,
    lists: true,
    request: (t) => ({
      method: 'GET',
      setupRequest: (req) => ({ ...req, path: randomPage(t, 'changes') }),
    }),
  },
];

/** A random page: the service's by one of its real cursors, the baseline's by a position. */
function randomPage(t: Target, which: 'records' | 'changes'): string {
  if (t.workspacePath === undefined)
    return `/workspaces/1/${which}?after=${Math.floor(Math.random() * (which === 'records' ? 9950 : 9900))}`;
  const cursors = t.cursors?.[which] ?? [];
  const cursor = cursors[Math.floor(Math.random() * cursors.length)];
  const param = which === 'records' ? 'cursor' : 'after';
  const after = cursor === undefined ? '' : `&${param}=${encodeURIComponent(cursor)}`;
  return `${t.workspacePath}/${which}?limit=${which === 'records' ? 50 : 100}${after}`;
}

/** Grows the service to 10 000 records and collects the cursor of every list and feed page. */
async function prepareLists(t: Target): Promise<void> {
  if (t.workspacePath === undefined) {
    await json(`${t.url}/setup-lists`, 'POST', t.headers);
    return;
  }
  while (t.ids.length < 10_000)
    t.ids.push(
      ...(await json(`${t.url}/records/batch`, 'POST', t.headers, t.createBody)).map((item: any) => item.record.id),
    );
  const cursors = { records: [] as string[], changes: [] as string[] };
  for (const [which, param, limit] of [
    ['records', 'cursor', 50],
    ['changes', 'after', 100],
  ] as const) {
    let next: string | null = null;
    do {
      const page: any = await json(
        `${t.url}${t.workspacePath}/${which}?limit=${limit}` +
          (next === null ? '' : `&${param}=${encodeURIComponent(next)}`),
        'GET',
        t.headers,
      );
      next = page.items.length === 0 ? null : page.nextCursor;
      if (next !== null) cursors[which].push(next);
    } while (next !== null);
  }
  t.cursors = cursors;
}

interface Totals {
  requests: number;
  ok: number;
  bad: number;
  seconds: number;
  p50: number[];
  p99: number[];
  /** CPU of the target's whole wrangler dev process tree (workerd, local D1) over the runs. */
  cpuMs: number | undefined;
}

/**
 * One autocannon run, timed here from its start to its last answer: autocannon's own duration,
 * and its end, fall on whole seconds.
 */
async function drive(
  target: Target,
  scenario: Scenario,
  counter: () => number,
  versions: number[] = [],
): Promise<{ result: autocannon.Result; seconds: number; cpuMs: number | undefined }> {
  const cpuBefore = target.cpuMs();
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
  const cpuAfter = target.cpuMs();
  return {
    result,
    seconds: (last - start) / 1000,
    cpuMs: cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore,
  };
}

function add(
  totals: Totals,
  { result, seconds, cpuMs }: { result: autocannon.Result; seconds: number; cpuMs: number | undefined },
): void {
  totals.requests += result.requests.total;
  totals.cpuMs = totals.cpuMs === undefined || cpuMs === undefined ? undefined : totals.cpuMs + cpuMs;
  totals.ok += result['2xx'];
  totals.bad += result.non2xx + result.errors + result.timeouts;
  totals.seconds += seconds;
  totals.p50.push(result.latency.p50);
  totals.p99.push(result.latency.p99);
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1);
const empty = (): Totals => ({ requests: 0, ok: 0, bad: 0, seconds: 0, p50: [], p99: [], cpuMs: 0 });
const cpuPerRequest = (t: Totals): string =>
  t.cpuMs === undefined ? '—' : (t.cpuMs / Math.max(t.requests, 1)).toFixed(2);

async function hotVersion(target: Target): Promise<number> {
  const record = await json(`${target.url}/records/${target.ids[0]}`, 'GET', target.headers);
  return record.version;
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
    const [s, b] = await Promise.all([serviceTarget(service, RECORDS), baselineTarget(baseline, RECORDS)]);
    let value = 0;
    const counter = () => ++value;
    const rows: string[][] = [];
    let hotAccounted = '';
    let ceiling = '';
    for (const scenario of scenarios.filter((one) => one.name.includes(ONLY))) {
      if (scenario.lists === true) {
        if (s.cursors === undefined) await Promise.all([prepareLists(s), prepareLists(b)]);
      } else if (scenario.name !== 'create-20') await Promise.all([warmUp(s), warmUp(b)]);
      if (scenario.cold === true) s.fresh = await freshRecords(s, ROUNDS * COLD_AMOUNT);
      const totals = { service: empty(), baseline: empty(), object: empty() };
      const hotBefore = scenario.counted === true ? await hotVersion(s) : 0;
      const versions: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        add(totals.service, await drive(s, scenario, counter, versions));
        add(totals.baseline, await drive(b, scenario, counter));
        // The baseline's UPDATE from an object nobody used: what a cold patch can reach at most.
        if (scenario.cold === true)
          add(totals.object, await drive({ ...b, patchPath: '/fresh-object/records/{id}' }, scenario, counter));
      }
      if (scenario.counted === true) {
        // Every answered version is distinct, they run without a gap from the version before the
        // run, and the stored version is the last of them: no patch lost, none counted twice.
        const after = await hotVersion(s);
        const sorted = [...versions].sort((x, y) => x - y);
        const exact =
          sorted.length === totals.service.ok &&
          sorted.every((v, i) => v === hotBefore + 1 + i) &&
          after === hotBefore + sorted.length;
        hotAccounted =
          `hot record: ${totals.service.ok} successful patches, answered versions ${sorted[0]}–${sorted.at(-1)}, ` +
          `stored version ${after}: ${exact ? 'every version accounted for' : 'MISMATCH'}`;
        if (!exact) loud.push(hotAccounted);
      }
      const rate = (t: Totals) => t.requests / Math.max(t.seconds, 1e-9);
      for (const [who, t] of [
        ['service', totals.service],
        ['baseline', totals.baseline],
        ['baseline through a fresh object', totals.object],
      ] as const) {
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
        `${cpuPerRequest(totals.service)} / ${cpuPerRequest(totals.baseline)}`,
      ]);
      if (scenario.cold === true)
        ceiling =
          `${scenario.name} at most: the baseline's UPDATE made from an object nobody used, one per request, ` +
          `answers ${rate(totals.object).toFixed(0)} req/s (${cpuPerRequest(totals.object)} CPU ms per request), ` +
          `${(rate(totals.object) / Math.max(rate(totals.baseline), 1e-9)).toFixed(2)} of the baseline's: every cold ` +
          `patch starts its record's object`;
    }
    const cpu = cpus()[0]?.model ?? 'unknown CPU';
    lines.push(`# Benchmark: service vs bare baseline`, '');
    lines.push(
      `${new Date().toISOString()} · ${cpus().length} × ${cpu} · Node ${process.version} · wrangler ` +
        `${version()} · ${CONNECTIONS} connections · ${ROUNDS} × ${SECONDS} s per side, alternating, every ` +
        `record patched once (singly) before each patch scenario`,
      '',
    );
    lines.push(
      '| scenario | service req/s | baseline req/s | service records/s | service p50 / p99 ms | baseline p50 / ' +
        'p99 ms | errors (service / baseline) | ratio | CPU ms per request (service / baseline) |',
    );
    lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const row of rows) lines.push(`| ${row.join(' | ')} |`);
    lines.push('', hotAccounted);
    if (ceiling !== '') lines.push('', ceiling);
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
    return execSync(`"${process.execPath}" node_modules/wrangler/bin/wrangler.js --version`, {
      encoding: 'utf8',
    }).trim();
  } catch {
    return '?';
  }
}

await main();
