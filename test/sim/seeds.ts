import { expect } from 'vitest';
import { simulate } from './run.ts';

/**
 * Runs the simulator over a range of seeds and fails with every failing seed's replay command.
 * `npm test` runs seeds 1–1,000 in four files (so they share the machine's cores); `npm run
 * test:deep` (SIM_DEEP=1; CI runs it after `npm test`) runs 1,001–10,000. SIM_SEEDS=<count per
 * file> and SIM_FROM=<first seed> choose others; SIM_SEED=<n> replays one (SIM_TRACE=1 prints its
 * schedule: every call, fault and reset), SIM_VERBOSE=1 prints each run's report.
 */
export async function checkSeeds(part: number, parts: number): Promise<void> {
  const only = process.env.SIM_SEED;
  if (only !== undefined && part !== 0) return;
  const deep = process.env.SIM_DEEP === '1';
  const perPart = Number(process.env.SIM_SEEDS ?? (deep ? 2_250 : 250));
  const from = Number(process.env.SIM_FROM ?? (deep ? 1_001 : 1)) + part * perPart;
  const seeds = only !== undefined ? [Number(only)] : Array.from({ length: perPart }, (_, i) => from + i);
  void parts;
  const failures: string[] = [];
  for (const seed of seeds) {
    const started = performance.now();
    const report = await simulate(seed);
    if (process.env.SIM_VERBOSE)
      console.log(JSON.stringify({ ...report, ms: Math.round(performance.now() - started) }));
    if (report.violations.length > 0)
      failures.push(`seed ${seed}: ${report.violations.join('; ')}\n  replay: SIM_SEED=${seed} npm run sim`);
    if (failures.length >= 5) break;
  }
  expect(failures).toEqual([]);
}
