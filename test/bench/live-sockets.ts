/**
 * A thread of `npm run bench:live`: opens its share of the sockets and notes when each message
 * naming a record arrived (ms since the epoch, comparable across threads); says how many so far when
 * asked, and all of them when told to stop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import WebSocket from 'ws';

const { url, headers, count, first, step } = workerData as {
  url: string;
  /** The headers of the run's sockets in turn: this thread's are `first`, `first + step`, … */
  headers: Record<string, string>[];
  count: number;
  first: number;
  step: number;
};
const arrivals = new Map<number, number[]>();
let received = 0;
const now = () => Date.now();
const sockets: WebSocket[] = [];
for (let opened = 0; opened < count; opened += 50) {
  await Promise.all(
    Array.from({ length: Math.min(50, count - opened) }, async (_, i) => {
      const socket = new WebSocket(url, { headers: headers[(first + (opened + i) * step) % headers.length] ?? {} });
      socket.on('message', (data: Buffer) => {
        const at = now();
        received++;
        const id = Number(/"recordId":(\d+)/.exec(data.toString())?.[1]);
        const seen = arrivals.get(id);
        if (seen === undefined) arrivals.set(id, [at]);
        else seen.push(at);
      });
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      sockets.push(socket);
    }),
  );
}
parentPort?.postMessage({ open: true });
parentPort?.on('message', (asked: 'count' | 'stop') => {
  if (asked === 'count') return parentPort?.postMessage({ count: received });
  for (const socket of sockets) socket.close(1000);
  parentPort?.postMessage({ arrivals: [...arrivals] });
});
