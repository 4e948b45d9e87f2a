/**
 * `npm run bench:files`: files of 1, 10 and 100 MiB uploaded and downloaded through the service
 * beside a bare Worker that puts and gets the same bytes in R2 (test/bench/files-baseline), both
 * under wrangler dev with fresh state, alternating sides to cancel drift. Prints MiB/s of each
 * side, their ratio and the memory the Worker's process grew by while one upload ran, and writes
 * the table to test/bench/files-results.md.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { startLocalWorker, type LocalWorker } from '../e2e/server.ts';
import { ADMIN, json } from './targets.ts';

const MiB = 1024 * 1024;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
/** Each size, and how many files of it one side sends a round (one at a time). */
const SIZES: [number, number][] = (
  [
    [1, 20],
    [10, 6],
    [100, 2],
  ] as [number, number][]
).filter(([mib]) => (process.env.BENCH_SIZES ?? '1,10,100').split(',').includes(String(mib)));
const RESULTS = fileURLToPath(new URL('./files-results.md', import.meta.url));

interface Side {
  name: string;
  worker: LocalWorker;
  upload: (bytes: Uint8Array<ArrayBuffer>, n: number) => Promise<string>;
  downloadPath: (ref: string) => string;
  headers: Record<string, string>;
}

async function serviceSide(worker: LocalWorker): Promise<Side> {
  const admin = { Authorization: `Bearer ${ADMIN}` };
  const user = await json(`${worker.url}/admin/users`, 'POST', admin, { name: 'bench' });
  const { key } = await json(`${worker.url}/admin/users/${user.id}/keys`, 'POST', admin);
  const ws = await json(`${worker.url}/admin/workspaces`, 'POST', admin, { name: 'bench' });
  await json(`${worker.url}/admin/workspaces/${ws.id}/members/${user.id}`, 'PUT', admin, { role: 'editor' });
  const headers = { Authorization: `Bearer ${key}` };
  return {
    name: 'service',
    worker,
    headers,
    upload: async (bytes, n) => {
      const res = await fetch(`${worker.url}/workspaces/${ws.id}/files?name=bench-${n}.bin`, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/octet-stream' },
        body: bytes,
      });
      if (res.status !== 201) throw new Error(`upload: ${res.status} ${await res.text()}`);
      const file = (await res.json()) as { id: number; sha256: string };
      if (process.env.BENCH_NOHASH === undefined && file.sha256 !== sha256(bytes))
        throw new Error('the upload answered another SHA-256');
      return String(file.id);
    },
    downloadPath: (id) => `/files/${id}`,
  };
}

function baselineSide(worker: LocalWorker): Side {
  return {
    name: 'baseline',
    worker,
    headers: {},
    upload: async (bytes, n) => {
      const key = `bench-${n}`;
      const res = await fetch(`${worker.url}/files/${key}`, { method: 'PUT', body: bytes });
      if (res.status !== 201) throw new Error(`baseline upload: ${res.status} ${await res.text()}`);
      await res.body?.cancel();
      return key;
    },
    downloadPath: (key) => `/files/${key}`,
  };
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** Reads a download to its end: its bytes counted, and hashed when `hash` is asked. */
async function download(side: Side, ref: string, hash: boolean): Promise<{ size: number; sha256?: string }> {
  const res = await fetch(`${side.worker.url}${side.downloadPath(ref)}`, { headers: side.headers });
  if (res.status !== 200 || res.body === null) throw new Error(`download: ${res.status}`);
  const digest = hash ? createHash('sha256') : undefined;
  let size = 0;
  const reader = res.body.getReader();
  for (let next = await reader.read(); !next.done; next = await reader.read()) {
    size += next.value.length;
    digest?.update(next.value);
  }
  return digest === undefined ? { size } : { size, sha256: digest.digest('hex') };
}

interface Totals {
  uploadMs: number;
  downloadMs: number;
  bytes: number;
  /** The most the Worker's processes grew by while one upload ran, in KiB. */
  peakGrowthKb: number;
}

/** Samples the Worker's resident memory while `run` goes; the most it grew above where it started. */
async function growth<T>(worker: LocalWorker, run: () => Promise<T>): Promise<{ value: T; kb: number }> {
  const start = (worker.rssBytes() ?? 0) / 1024;
  let peak = start;
  const timer = setInterval(() => (peak = Math.max(peak, (worker.rssBytes() ?? 0) / 1024)), 10);
  try {
    const value = await run();
    peak = Math.max(peak, (worker.rssBytes() ?? 0) / 1024);
    return { value, kb: Math.max(0, peak - start) };
  } finally {
    clearInterval(timer);
  }
}

let counter = 0;

async function round(side: Side, bytes: Uint8Array<ArrayBuffer>, files: number, totals: Totals): Promise<void> {
  const refs: string[] = [];
  let t = performance.now();
  for (let i = 0; i < files; i++) {
    const { value, kb } = await growth(side.worker, () => side.upload(bytes, counter++));
    refs.push(value);
    totals.peakGrowthKb = Math.max(totals.peakGrowthKb, kb);
  }
  totals.uploadMs += performance.now() - t;
  t = performance.now();
  for (const [i, ref] of refs.entries()) {
    const got = await download(side, ref, i === 0);
    if (got.size !== bytes.length) throw new Error(`${side.name} download: ${got.size} bytes of ${bytes.length}`);
    if (got.sha256 !== undefined && got.sha256 !== sha256(bytes)) throw new Error(`${side.name}: other bytes back`);
  }
  totals.downloadMs += performance.now() - t;
  totals.bytes += bytes.length * files;
}

const rate = (bytes: number, ms: number): number => bytes / MiB / (ms / 1000);

async function main(): Promise<void> {
  console.log('Starting the service and the files baseline (wrangler dev, fresh state)…');
  const [service, baseline] = await Promise.all([
    startLocalWorker({ vars: { ADMIN_TOKEN: ADMIN, RATE_LIMITS: 'off' } }),
    startLocalWorker({ config: fileURLToPath(new URL('./files-baseline/wrangler.toml', import.meta.url)) }),
  ]);
  try {
    const sides = [await serviceSide(service), baselineSide(baseline)];
    const rows: string[][] = [];
    for (const [mib, files] of SIZES) {
      const bytes = Uint8Array.from({ length: mib * MiB }, (_, i) => (i * 7 + 3) % 251);
      const totals = sides.map(() => ({ uploadMs: 0, downloadMs: 0, bytes: 0, peakGrowthKb: 0 }));
      // A warm-up file each, not counted.
      for (const side of sides) await download(side, await side.upload(bytes, counter++), false);
      for (let r = 0; r < ROUNDS; r++)
        for (const [i, side] of (r % 2 === 0 ? sides : [...sides].reverse()).entries())
          await round(side, bytes, files, totals[r % 2 === 0 ? i : sides.length - 1 - i] as Totals);
      const [s, b] = totals as [Totals, Totals];
      const row = [
        `${mib} MiB`,
        rate(s.bytes, s.uploadMs).toFixed(0),
        rate(b.bytes, b.uploadMs).toFixed(0),
        (rate(s.bytes, s.uploadMs) / rate(b.bytes, b.uploadMs)).toFixed(2),
        rate(s.bytes, s.downloadMs).toFixed(0),
        rate(b.bytes, b.downloadMs).toFixed(0),
        (rate(s.bytes, s.downloadMs) / rate(b.bytes, b.downloadMs)).toFixed(2),
        `${(s.peakGrowthKb / 1024).toFixed(1)} / ${(b.peakGrowthKb / 1024).toFixed(1)}`,
      ];
      rows.push(row);
      console.log(row.join(' | '));
    }
    const lines = [
      '# Benchmark: files through the service vs a bare R2 Worker',
      '',
      `${new Date().toISOString()} · ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'} · Node ` +
        `${process.version} · ${ROUNDS} rounds per side, alternating, one file at a time`,
      '',
      '| size | upload MiB/s service | baseline | ratio | download MiB/s service | baseline | ratio | memory ' +
        'growth per upload MiB (service / baseline) |',
      '|---|---|---|---|---|---|---|---|',
      ...rows.map((row) => `| ${row.join(' | ')} |`),
      '',
    ];
    writeFileSync(RESULTS, lines.join('\n'));
    console.log(lines.join('\n'));
  } finally {
    await Promise.all([service.stop(), baseline.stop()]);
  }
}

await main();
