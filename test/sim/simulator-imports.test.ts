import { expect, it } from 'vitest';
import { simulateImport } from './imports-run.ts';

/**
 * Imports under faults, one seed a run (imports-run.ts): seeds 1–100 in `npm test`, 101–500 in
 * `npm run test:deep` (SIM_DEEP=1); SIM_SEEDS=<count> and SIM_FROM=<first seed> choose others,
 * SIM_SEED=<n> replays one (SIM_TRACE=1 prints its schedule, SIM_DEBUG_RECORD=<id> a record's
 * feed), SIM_VERBOSE=1 prints each run's report.
 */
it('imports apply every row exactly once under lost replies, resets and twins', { timeout: 600_000 }, async () => {
  const only = process.env.SIM_SEED;
  const deep = process.env.SIM_DEEP === '1';
  const count = Number(process.env.SIM_SEEDS ?? (deep ? 400 : 100));
  const from = Number(process.env.SIM_FROM ?? (deep ? 101 : 1));
  const seeds = only !== undefined ? [Number(only)] : Array.from({ length: count }, (_, i) => from + i);
  const failures: string[] = [];
  for (const seed of seeds) {
    const started = performance.now();
    const report = await simulateImport(seed);
    if (process.env.SIM_VERBOSE)
      console.log(JSON.stringify({ ...report, ms: Math.round(performance.now() - started) }));
    if (report.violations.length > 0)
      failures.push(
        `seed ${seed}: ${report.violations.slice(0, 8).join('; ')}\n  replay: ` +
          `SIM_SEED=${seed} ` +
          'vitest run --config test/vitest.config.ts --project sim test/sim/simulator-imports.test.ts',
      );
    if (failures.length >= 5) break;
  }
  expect(failures).toEqual([]);
});
