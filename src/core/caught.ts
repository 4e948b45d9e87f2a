import type { Result } from './result.ts';

/** A step's value, or the error it threw, kept until it may be answered. */
export type Caught<T> = Result<T, { error: unknown }>;

/**
 * Runs a step whose failure must wait to be answered: an unknown key is answered 401 before any
 * complaint about the body or the query, so those are caught here and answered once the caller
 * is known.
 */
export async function caught<T>(step: () => Promise<T>): Promise<Caught<T>> {
  try {
    return { ok: true, value: await step() };
  } catch (error) {
    return { ok: false, error };
  }
}
