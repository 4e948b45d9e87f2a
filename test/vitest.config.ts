import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { startReceiver } from './tools/webhook-receiver.ts';

const root = (path: string): string => fileURLToPath(new URL(`../${path}`, import.meta.url));

export const TEST_ADMIN_TOKEN = 'test-admin-token';

/**
 * Timeouts sized for a machine of two cores running the whole suite at once, with a wide margin:
 * no test passes or fails by the speed of the day. A test that needs more sets its own, and the
 * run's notes (tools/run-notes.ts) list every test that took more than half of its timeout.
 */
const ROOMY = { testTimeout: 60_000, hookTimeout: 60_000 };

// The webhook tests' receiver: a real HTTP server in this process, reached over the network.
const receiver = await startReceiver();

/** A project that runs its tests inside the Workers runtime of `config`, with the migrations applied. */
function workersProject(name: string, config: string, include: string) {
  return {
    plugins: [
      cloudflareTest(async () => ({
        wrangler: { configPath: root(config) },
        miniflare: {
          bindings: {
            ADMIN_TOKEN: TEST_ADMIN_TOKEN,
            TEST_MIGRATIONS: await readD1Migrations(root('migrations')),
            // Replays a fuzz run: FUZZ_SEED=<seed printed by fuzz.test.ts> npm test.
            FUZZ_SEED: process.env.FUZZ_SEED ?? '',
            FUZZ_RUNS: process.env.FUZZ_RUNS ?? '',
            // The benchmarks' size: BENCH_RECORDS=<n> npm run bench:scale (or bench:query).
            BENCH_RECORDS: process.env.BENCH_RECORDS ?? '',
            BENCH_RATE_RECORDS: process.env.BENCH_RATE_RECORDS ?? '',
            // Webhooks: the receiver may be called over http:, and failures are timed in ms, not hours.
            WEBHOOK_RECEIVER: receiver.url,
            WEBHOOK_ALLOW_HTTP: receiver.url,
            WEBHOOK_RETRY_BASE_MS: '50',
            WEBHOOK_DISABLE_AFTER_MS: '2000',
            // Benchmarks drive one key far past any sensible limit: the limiter stays out of them.
            ...(name.startsWith('bench') ? { RATE_LIMITS: 'off' } : {}),
          },
          // A limiter a test can swap in for RATE_LIMITER to reach its limit in a few calls.
          ratelimits: { TEST_TIGHT_LIMITER: { namespace_id: '9001', simple: { limit: 3, period: 60 } } },
        },
      })),
    ],
    test: { name, root: root(''), include: [include], setupFiles: ['test/integration/setup.ts'], ...ROOMY },
  };
}

/** Files wrangler bundles as text (`.html`, `.txt`), imported the same way by code that runs in Node. */
const textModules = {
  name: 'text-modules',
  enforce: 'pre' as const,
  load(id: string): string | undefined {
    return /\.(html|txt)$/.test(id) ? `export default ${JSON.stringify(readFileSync(id, 'utf8'))};` : undefined;
  },
};

export default defineConfig({
  test: {
    reporters: ['default', root('test/tools/run-notes.ts')],
    // Vitest's default is one file at a time on two cores (the cores less one); the end-to-end
    // files mostly wait on their Worker, so two at a time keeps both cores busy.
    maxWorkers: 2,
    projects: [
      {
        // The pure core: plain Node, milliseconds.
        plugins: [textModules],
        test: {
          name: 'core',
          root: root(''),
          include: ['test/unit/**/*.test.ts'],
          benchmark: { include: ['test/unit/**/*.bench.ts'] },
          ...ROOMY,
        },
      },
      {
        // The write protocol in a seeded simulator: the production Worker and objects in Node, on
        // node:sqlite, with a virtual clock and a network that fails, loses and resets.
        resolve: { alias: { 'cloudflare:workers': root('test/sim/cloudflare-workers.ts') } },
        plugins: [textModules],
        test: { name: 'sim', root: root(''), include: ['test/sim/**/*.test.ts'], ...ROOMY },
      },
      // Storage, routes and the Durable Object inside the Workers runtime against real D1.
      workersProject('workers', 'test/integration/wrangler.toml', 'test/integration/**/*.test.ts'),
      // The same, against the chaos build: real D1 and objects behind bindings that inject faults.
      workersProject('chaos', 'test/chaos/wrangler.toml', 'test/chaos/**/*.test.ts'),
      // `npm run bench:query` only: indexed and unindexed queries over 100,000 records.
      ...(process.env.BENCH_QUERY === '1'
        ? [workersProject('bench-query', 'test/integration/wrangler.toml', 'test/bench/workers/query.bench.test.ts')]
        : []),
      // `npm run bench:scale` only: pages and writes over 1,000,000 records.
      ...(process.env.BENCH_SCALE === '1'
        ? [workersProject('bench-scale', 'test/integration/wrangler.toml', 'test/bench/workers/scale.bench.test.ts')]
        : []),
      // `npm run bench:import` only: an import of 200,000 rows beside the batch API.
      ...(process.env.BENCH_IMPORT === '1'
        ? [workersProject('bench-import', 'test/integration/wrangler.toml', 'test/bench/workers/import.bench.test.ts')]
        : []),
      // `npm run bench:tenants` only: one tenant's patches beside another's import; import rates per database.
      ...(process.env.BENCH_TENANTS === '1'
        ? [
            workersProject(
              'bench-tenants',
              'test/integration/wrangler.toml',
              'test/bench/workers/tenants.bench.test.ts',
            ),
          ]
        : []),
      {
        // Over real HTTP against a locally started Worker.
        test: {
          name: 'e2e',
          root: root(''),
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 120_000,
          // Starting a local Worker while the others' Chromium tests run can take two minutes on 2 cores.
          hookTimeout: 240_000,
        },
      },
    ],
  },
});
