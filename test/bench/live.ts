/**
 * `npm run bench:live`: SOCKETS WebSockets on one workspace's live stream while RATE writes a second
 * arrive for SECONDS, under wrangler dev, beside a bare baseline (test/bench/baseline-live: a row
 * stored, then sent to every socket by one Durable Object) in the same run. For every write and
 * every socket it takes the time from the write being sent, and from its answer, to that socket's
 * message; it prints the percentiles, the CPU and memory wrangler dev's processes spent, and what
 * as many polling consoles would ask of D1 beside what the live object asks.
 */
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { startLocalWorker, type LocalWorker } from '../e2e/server.ts';

const SOCKETS = Number(process.env.LIVE_SOCKETS ?? 1000);
const RATE = Number(process.env.LIVE_RATE ?? 100);
const SECONDS = Number(process.env.LIVE_SECONDS ?? 10);
/** Threads holding the sockets, so that reading messages never delays sending a write. */
const THREADS = Number(process.env.LIVE_THREADS ?? 2);
/** The console's polling period: each open tab read the feed this often before the stream. */
const POLL_MS = 750;
const ADMIN = 'bench-live-admin';
const BARE = fileURLToPath(new URL('./baseline-live/wrangler.toml', import.meta.url));

interface Target {
  socketUrl: string;
  /** The headers of each socket, in turn. */
  headers: Record<string, string>[];
  /** One write; the id of the record it made. */
  write: (i: number) => Promise<number>;
}

interface Figures {
  received: number;
  expected: number;
  fromAnswer: number[];
  fromSent: number[];
  answers: number[];
  cpuMsPerMessage: number;
  bytesPerSocket: number;
}

async function call(url: string, method: string, path: string, key: string, body?: unknown): Promise<any> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** The service: a workspace, its editor's key, and an object whose records each write creates. */
async function service(worker: LocalWorker): Promise<Target> {
  const as = (method: string, path: string, body?: unknown) => call(worker.url, method, path, ADMIN, body);
  const user = await as('POST', '/admin/users', { name: 'bench' });
  // A key holds at most 100 streams of a workspace: the sockets go over as many keys as they need.
  const keys: string[] = [];
  while (keys.length * 100 < SOCKETS) keys.push((await as('POST', `/admin/users/${user.id}/keys`)).key as string);
  const key = keys[0] as string;
  const workspace = await as('POST', '/admin/workspaces', { name: 'live' });
  await as('PUT', `/admin/workspaces/${workspace.id}/members/${user.id}`, { role: 'editor' });
  const object = await as('POST', '/admin/objects', {
    name: 'Tick',
    workspaceIds: [workspace.id],
    fields: [{ name: 'label', type: 'text' }],
  });
  return {
    socketUrl: `${worker.url.replace('http', 'ws')}/workspaces/${workspace.id}/live`,
    headers: keys.map((each) => ({ Authorization: `Bearer ${each}` })),
    write: async (i) => {
      const body = [{ objectId: object.id, fieldValues: [{ fieldName: 'label', value: `${i}` }] }];
      return (await call(worker.url, 'POST', '/records/batch', key, body))[0].record.id;
    },
  };
}

const bare = (worker: LocalWorker): Target => ({
  socketUrl: `${worker.url.replace('http', 'ws')}/live`,
  headers: [{}],
  write: async (i) => (await call(worker.url, 'POST', '/write', '', String(i))).id,
});

async function measure(worker: LocalWorker, target: Target): Promise<Figures> {
  const rssBefore = worker.rssBytes() ?? 0;
  const threads = Array.from(
    { length: THREADS },
    (_, i) =>
      new Worker(new URL('./live-sockets.ts', import.meta.url), {
        workerData: {
          url: target.socketUrl,
          headers: target.headers,
          count: Math.floor(SOCKETS / THREADS) + (i < SOCKETS % THREADS ? 1 : 0),
          first: i,
          step: THREADS,
        },
      }),
  );
  const reply = (thread: Worker) => new Promise<any>((resolve) => thread.once('message', resolve));
  await Promise.all(threads.map(reply));
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const bytesPerSocket = ((worker.rssBytes() ?? 0) - rssBefore) / SOCKETS;
  const cpuBefore = worker.cpuMs() ?? 0;
  const sent = new Map<number, number>();
  const answered = new Map<number, number>();
  const writes: Promise<void>[] = [];
  const started = Date.now();
  for (let i = 0; i < RATE * SECONDS; i++) {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + (i * 1000) / RATE - Date.now())));
    const at = Date.now();
    writes.push(
      target.write(i).then((id) => {
        answered.set(id, Date.now());
        sent.set(id, at);
      }),
    );
  }
  await Promise.all(writes);
  // Until every socket has every item, or 30 s.
  const arrivals = new Map<number, number[]>();
  for (const deadline = Date.now() + 30_000; ;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const counts = await Promise.all(
      threads.map((thread) => {
        const asked = reply(thread);
        thread.postMessage('count');
        return asked;
      }),
    );
    if (counts.reduce((sum, c) => sum + (c.count as number), 0) >= answered.size * SOCKETS || Date.now() > deadline)
      break;
  }
  const cpuMs = (worker.cpuMs() ?? 0) - cpuBefore;
  for (const thread of threads) {
    const asked = reply(thread);
    thread.postMessage('stop');
    for (const [id, times] of (await asked).arrivals as [number, number[]][])
      arrivals.set(id, [...(arrivals.get(id) ?? []), ...times]);
    await thread.terminate();
  }
  const figures: Figures = {
    received: 0,
    expected: answered.size * SOCKETS,
    fromAnswer: [],
    fromSent: [],
    answers: [],
    cpuMsPerMessage: cpuMs / (answered.size * SOCKETS),
    bytesPerSocket,
  };
  for (const [id, at] of answered) {
    const seen = arrivals.get(id) ?? [];
    figures.received += seen.length;
    figures.answers.push(at - (sent.get(id) ?? at));
    // A message can arrive before its write's answer does: that is no wait at all.
    for (const arrival of seen) figures.fromAnswer.push(Math.max(0, arrival - at));
    for (const arrival of seen) figures.fromSent.push(arrival - (sent.get(id) ?? at));
  }
  for (const list of [figures.fromAnswer, figures.fromSent, figures.answers]) list.sort((a, b) => a - b);
  return figures;
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const spread = (sorted: number[]) => `${percentile(sorted, 50)} / ${percentile(sorted, 99)}`;

const results: [string, Figures][] = [];
for (const [name, start] of [
  ['service', () => startLocalWorker({ vars: { ADMIN_TOKEN: ADMIN, RATE_LIMITS: 'off' } })],
  ['bare', () => startLocalWorker({ config: BARE, migrate: false })],
] as const) {
  const worker = await start();
  try {
    results.push([name, await measure(worker, name === 'service' ? await service(worker) : bare(worker))]);
  } finally {
    await worker.stop();
  }
}

console.log(`\n${SOCKETS} sockets on one workspace, ${RATE} writes a second for ${SECONDS} s, locally\n`);
console.log(`| figure | ${results.map(([name]) => name).join(' | ')} |`);
console.log(`|---|${results.map(() => '---:').join('|')}|`);
const row = (label: string, show: (f: Figures) => string) =>
  console.log(`| ${label} | ${results.map(([, f]) => show(f)).join(' | ')} |`);
row('messages received', (f) => `${f.received} of ${f.expected}`);
row("write's answer → message, p50 / p99 ms", (f) => spread(f.fromAnswer));
row('write sent → message, p50 / p99 ms', (f) => spread(f.fromSent));
row('write sent → answer, p50 / p99 ms', (f) => spread(f.answers));
row("wrangler dev's CPU per message, µs", (f) => (f.cpuMsPerMessage * 1000).toFixed(1));
row("wrangler dev's memory per open socket, KiB", (f) => (f.bytesPerSocket / 1024).toFixed(1));
console.log(
  `\nD1 feed reads a second for ${SOCKETS} open consoles: polling every ${POLL_MS} ms, ` +
    `${Math.round((SOCKETS * 1000) / POLL_MS)}; live, at most ${RATE + 1} ` +
    '(a round trip a run: one a wake-up, one a second).',
);
