import type { Result } from './result.ts';

/** A step's value, or the error it threw, held until it may be answered. */
export type Settled<T> = Result<T, { error: unknown }>;

/** Runs a step whose failure must wait until the caller is authenticated (401 comes first). */
export async function settle<T>(step: () => Promise<T>): Promise<Settled<T>> {
  try {
    return { ok: true, value: await step() };
  } catch (error) {
    return { ok: false, error };
  }
}
