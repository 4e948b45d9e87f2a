import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyDocs } from '../tools/copy-docs.ts';
import { d1Bindings } from '../tools/migrate.ts';

/** Runs the project's Worker under `wrangler dev` with fresh local state, for e2e tests and benchmarks. */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WRANGLER = join(ROOT, 'node_modules', 'wrangler', 'bin', 'wrangler.js');
// Nothing may wait on Cloudflare's servers: these turn off telemetry, `request.cf` data and the update check.
const QUIET = {
  WRANGLER_SEND_METRICS: 'false',
  CLOUDFLARE_CF_FETCH_ENABLED: 'false',
  WRANGLER_HIDE_BANNER: 'true',
  NO_COLOR: '1',
};

export interface LocalWorker {
  url: string;
  stop: () => Promise<void>;
  /** CPU time used so far by wrangler dev's whole process tree (workerd included), in ms; undefined without /proc. */
  cpuMs: () => number | undefined;
  /** The resident memory of that process tree now, in KiB; undefined without /proc. */
  rssKb: () => number | undefined;
  /** Its local state directory (D1 included), which another Worker may be started on with `state`. */
  state: string;
  /** The port of its DevTools inspector (a CPU profile of the Worker and its objects). */
  inspectorPort: number;
  /** What wrangler dev printed so far (its errors, and the Worker's). */
  output: () => string;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/**
 * Starts `config` (a wrangler.toml) on a free port; migrations, if any, are applied first (to the
 * REPLICA database too with `replica`, the geo simulation's read replica).
 */
export async function startLocalWorker(
  options: {
    config?: string;
    vars?: Record<string, string>;
    migrate?: boolean;
    /** Local state to use and keep (a restart of the same service); else a fresh one, removed on stop. */
    persistTo?: string;
    replica?: boolean;
    /** Another running Worker's state, shared as it is: not migrated, not removed. */
    state?: string;
  } = {},
): Promise<LocalWorker> {
  const config = options.config ?? join(ROOT, 'wrangler.toml');
  // /docs serves Redoc's bundle from the static assets: a fresh clone has not copied it yet.
  copyDocs();
  const shared = options.state !== undefined;
  const keep = shared || options.persistTo !== undefined;
  const state = options.state ?? options.persistTo ?? mkdtempSync(join(tmpdir(), 'record-service-'));
  const env = { ...process.env, ...QUIET };
  // A state another start made (a restart of the same service, a second Worker on it) is migrated already.
  const fresh = !shared && readdirSync(state).length === 0;
  if (options.migrate !== false && fresh)
    cpSync(await migratedState(config, options.replica === true), state, { recursive: true });
  const [port, inspector] = [await freePort(), await freePort()];
  const vars = Object.entries(options.vars ?? {}).flatMap(([k, v]) => ['--var', `${k}:${v}`]);
  const child = spawn(
    process.execPath,
    [
      WRANGLER,
      'dev',
      '--config',
      config,
      '--ip',
      '127.0.0.1',
      '--port',
      String(port),
      '--inspector-port',
      String(inspector),
      '--persist-to',
      state,
      '--log-level',
      'error',
      '--show-interactive-dev-session=false',
      ...vars,
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntilUp(url, child, () => output);
  } catch (error) {
    await stop(child, keep ? undefined : state);
    throw error;
  }
  return {
    url,
    state,
    inspectorPort: inspector,
    stop: () => stop(child, keep ? undefined : state),
    cpuMs: () => treeCpuMs(child.pid),
    rssKb: () => treeRssKb(child.pid),
    output: () => output,
  };
}

/**
 * A local state with every database of `config` migrated (REPLICA too with `replica`), made once per
 * configuration and migrations and then copied for each Worker started: `wrangler d1 migrations
 * apply` costs a process and seconds per database, and every end-to-end file starts a Worker or
 * more. The copy is named by a hash of what it was made from, so a changed migration makes a new one;
 * concurrent test files wait for the one that makes it.
 */
async function migratedState(config: string, replica: boolean): Promise<string> {
  const migrations = join(ROOT, 'migrations');
  const hash = createHash('sha256').update(readFileSync(config)).update(String(replica));
  hash.update(readFileSync(join(ROOT, 'node_modules', 'wrangler', 'package.json')));
  for (const name of readdirSync(migrations).sort()) hash.update(name).update(readFileSync(join(migrations, name)));
  const made = join(tmpdir(), `record-service-migrated-${hash.digest('hex').slice(0, 16)}`);
  const lock = `${made}.lock`;
  for (const deadline = Date.now() + 180_000; !existsSync(made);) {
    try {
      mkdirSync(lock);
    } catch {
      // Another test file makes it: wait for it. A lock left by a run that was killed meanwhile goes.
      const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 120_000) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`no migrated state at ${made} within 180 s`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      continue;
    }
    try {
      if (existsSync(made)) break;
      const making = mkdtempSync(`${made}.making-`);
      const env = { ...process.env, ...QUIET };
      const bindings = d1Bindings(readFileSync(config, 'utf8')).filter((b) => b !== 'REPLICA' || replica);
      for (const database of bindings) {
        const migrated = spawnSync(
          process.execPath,
          [WRANGLER, 'd1', 'migrations', 'apply', database, '--local', '--persist-to', making, '--config', config],
          { env, encoding: 'utf8' },
        );
        if (migrated.status !== 0) throw new Error(`migrations failed: ${migrated.stderr}${migrated.stdout}`);
      }
      renameSync(making, made);
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
  return made;
}

const TICKS_PER_SECOND = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim() || 100);

/** utime + stime of `root` and every process below it, from /proc (Linux). */
function treeCpuMs(root: number | undefined): number | undefined {
  if (root === undefined) return undefined;
  const stats = new Map<number, { parent: number; ticks: number }>();
  let names: string[];
  try {
    names = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  for (const name of names) {
    try {
      // Fields after the command's closing parenthesis: state, ppid, …, utime (12th), stime (13th).
      const rest = readFileSync(`/proc/${name}/stat`, 'utf8').split(') ').at(-1)?.split(' ') ?? [];
      stats.set(Number(name), { parent: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]) });
    } catch {
      // The process ended meanwhile.
    }
  }
  let ticks = 0;
  const below = [root];
  while (below.length > 0) {
    const pid = below.pop() as number;
    ticks += stats.get(pid)?.ticks ?? 0;
    for (const [child, { parent }] of stats) if (parent === pid) below.push(child);
  }
  return (ticks / TICKS_PER_SECOND) * 1000;
}

/** VmRSS of `root` and every process below it, from /proc (Linux). */
function treeRssKb(root: number | undefined): number | undefined {
  if (root === undefined) return undefined;
  const procs = new Map<number, { parent: number; kb: number }>();
  let names: string[];
  try {
    names = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  for (const name of names) {
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      const parent = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      const kb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      procs.set(Number(name), { parent, kb });
    } catch {
      // The process ended meanwhile.
    }
  }
  let kb = 0;
  const below = [root];
  while (below.length > 0) {
    const pid = below.pop() as number;
    kb += procs.get(pid)?.kb ?? 0;
    for (const [child, { parent }] of procs) if (parent === pid) below.push(child);
  }
  return kb;
}

async function waitUntilUp(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited: ${output()}`);
    try {
      const res = await fetch(`${url}/health`);
      await res.body?.cancel();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  throw new Error(`wrangler dev did not answer within 60 s: ${output()}`);
}

async function stop(child: ChildProcess, state: string | undefined): Promise<void> {
  if (child.exitCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
  if (state !== undefined) rmSync(state, { recursive: true, force: true });
}

/**
 * One JSON request to a local Worker, sending `bookmark` as `X-D1-Bookmark` when given: the status,
 * the parsed body, and the bookmark the answer carried (every answer carries one).
 */
export async function sendTo(
  worker: Pick<LocalWorker, 'url'>,
  method: string,
  path: string,
  key: string,
  body?: unknown,
  bookmark?: string,
): Promise<{ status: number; body: any; bookmark: string }> {
  const res = await fetch(`${worker.url}${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${key}`,
      'Content-Type': 'application/json',
      ...(bookmark === undefined ? {} : { 'X-D1-Bookmark': bookmark }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const answered = res.headers.get('X-D1-Bookmark');
  if (answered === null) throw new Error(`${method} ${path}: an answer without X-D1-Bookmark`);
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text), bookmark: answered };
}
