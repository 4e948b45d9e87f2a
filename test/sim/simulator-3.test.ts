import { it } from 'vitest';
import { checkSeeds } from './seeds.ts';

// A quarter of the simulator's seeds (see seeds.ts); the four files run side by side.
it('simulated schedules of concurrent writes under faults keep every invariant', { timeout: 600_000 }, () =>
  checkSeeds(2, 4),
);
