/**
 * `npm run bench:profile`: where one scenario's time goes, measured rather than guessed. Starts the
 * service under wrangler dev, warms its records as `npm run bench` does, then drives one scenario
 * (the hot record by default; `BENCH_PROFILE=patch` for patches over 1000 records, `batch` for
 * batches of 20 of them, `create` for creates of 20, `cold` for first patches of records nobody used) while the
 * DevTools inspector samples the Worker's isolate (the Worker and its objects). Prints the
 * functions and files with the most self time and writes the whole profile to
 * `test/bench/hot.cpuprofile` (open it in Chrome's DevTools). D1's SQLite runs outside the isolate
 * and is not in it.
 */
import autocannon from 'autocannon';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { startLocalWorker } from '../e2e/server.ts';
import { ADMIN, freshRecords, serviceTarget, warmUp } from './targets.ts';

const WHICH = process.env.BENCH_PROFILE ?? 'hot';
const AMOUNT = Number(process.env.BENCH_HOT_AMOUNT ?? 4000);
const OUT = fileURLToPath(new URL('./hot.cpuprofile', import.meta.url));

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; scriptId: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** One DevTools session over the inspector's WebSocket. */
async function devtools(
  port: number,
): Promise<{ send: (method: string, params?: object) => Promise<any>; close: () => void }> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl: string }[];
  const url = targets[0]?.webSocketDebuggerUrl;
  if (url === undefined) throw new Error('the inspector lists no target');
  // Node's own WebSocket fails wrangler's inspector handshake; `ws` does not.
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  const waiting = new Map<number, (value: any) => void>();
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) waiting.get(message.id)?.(message.result);
  });
  let next = 0;
  return {
    close: () => socket.close(),
    send: (method, params = {}) =>
      new Promise((resolve) => {
        const id = ++next;
        waiting.set(id, resolve);
        socket.send(JSON.stringify({ id, method, params }));
      }),
  };
}

/** Self time per key (a function, or a file), in ms, largest first. */
function selfTimes(profile: Profile, keyOf: (node: ProfileNode) => string): [string, number][] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const totals = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    if (node === undefined) return;
    const key = keyOf(node);
    totals.set(key, (totals.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return [...totals].sort((a, b) => b[1] - a[1]);
}

const shortUrl = (url: string): string => url.replace(/^.*?\/(src|node_modules|\.wrangler)\//, '$1/') || '(native)';

async function main(): Promise<void> {
  const worker = await startLocalWorker({ vars: { ADMIN_TOKEN: ADMIN, RATE_LIMITS: 'off' } });
  try {
    const target = await serviceTarget(worker, 1000);
    await warmUp(target);
    // A cold patch takes a record nobody patched yet, one per request.
    const fresh = WHICH === 'cold' ? await freshRecords(target, AMOUNT) : [];
    const session = await devtools(worker.inspectorPort);
    await session.send('Profiler.enable');
    await session.send('Profiler.setSamplingInterval', { interval: 200 });
    await session.send('Profiler.start');
    let value = 0;
    const timings = new Map<string, number>();
    const started = performance.now();
    const result = await (autocannon({
      url: target.url,
      connections: Number(process.env.BENCH_CONNECTIONS ?? 32),
      amount: AMOUNT,
      headers: target.headers,
      requests: [
        {
          method: WHICH === 'create' ? 'POST' : 'PATCH',
          setupRequest: (req) => {
            const random = () => target.ids[Math.floor(Math.random() * target.ids.length)] as number;
            if (WHICH === 'create') return { ...req, path: '/records/batch', body: JSON.stringify(target.createBody) };
            if (WHICH === 'batch') {
              const ids = new Set<number>();
              while (ids.size < 20) ids.add(random());
              return { ...req, path: '/records/batch', body: JSON.stringify(target.batchBody([...ids], ++value)) };
            }
            const id = WHICH === 'hot' ? target.ids[0] : WHICH === 'cold' ? (fresh.pop() ?? random()) : random();
            const path = target.patchPath.replace('{id}', String(id));
            return { ...req, path, body: JSON.stringify(target.patchBody(++value)) };
          },
        },
      ],
    }) as unknown as Promise<autocannon.Result>);
    const seconds = (performance.now() - started) / 1000;
    const { profile } = (await session.send('Profiler.stop')) as { profile: Profile };
    // The bundle's own lines, read before wrangler removes it: a function's name is not always enough.
    await session.send('Debugger.enable');
    const sources = new Map<string, string[]>();
    for (const id of new Set(profile.nodes.map((node) => node.callFrame.scriptId)))
      if (id !== '0')
        sources.set(
          id,
          String((await session.send('Debugger.getScriptSource', { scriptId: id }))?.scriptSource).split('\n'),
        );
    session.close();
    writeFileSync(OUT, JSON.stringify(profile));
    const lineOf = (node: ProfileNode) =>
      (sources.get(node.callFrame.scriptId)?.[node.callFrame.lineNumber] ?? '').trim().slice(0, 70);
    const sampled = (profile.endTime - profile.startTime) / 1000;
    console.log(
      `${result.requests.total} requests (${result['2xx']} 2xx) in ${seconds.toFixed(1)} s: ` +
        `${(result.requests.total / seconds).toFixed(0)}/s; ${sampled.toFixed(0)} ms sampled`,
    );
    const burst = await Promise.all(
      Array.from({ length: 64 }, (_, i) =>
        fetch(target.url + target.patchPath.replace('{id}', String(target.ids[0])), {
          method: 'PATCH',
          headers: target.headers,
          body: JSON.stringify(target.patchBody(-i)),
        }).then((res) => res.headers.get('server-timing') ?? ''),
      ),
    );
    for (const timing of burst) timings.set(timing, (timings.get(timing) ?? 0) + 1);
    for (const [timing, n] of [...timings].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(n, timing);
    const perRequest = (ms: number) => `${((ms / result.requests.total) * 1000).toFixed(0)} µs/req`;
    for (const [title, keyOf] of [
      ['files', (node: ProfileNode) => shortUrl(node.callFrame.url)],
      [
        'functions',
        (node: ProfileNode) =>
          `${node.callFrame.functionName || '(anonymous)'} ${shortUrl(node.callFrame.url)}:` +
          `${node.callFrame.lineNumber + 1}  ${lineOf(node)}`,
      ],
    ] as const) {
      console.log(`\nSelf time by ${title}:`);
      for (const [key, ms] of selfTimes(profile, keyOf).slice(0, 30))
        console.log(`${ms.toFixed(0).padStart(7)} ms  ${perRequest(ms).padStart(12)}  ${key}`);
    }
  } finally {
    await worker.stop();
  }
}

await main();
