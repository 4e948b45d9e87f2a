/**
 * Time and chance, injected: production passes the system's; the write protocol's simulator
 * passes a virtual clock and a seeded generator, so any schedule it explores replays exactly.
 */
export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
  /** A number in [0, 1), for jitter. */
  random(): number;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  random: () => Math.random(),
};
