import { systemClock, type Clock } from '../core/clock.ts';

/**
 * The service's one retry policy, for the two things worth another try: a call that failed on the
 * way (D1 or an object lost the connection, was reset, was being updated), and a write that lost a
 * race (a record moved on before its batch committed). "Overloaded" is never retried.
 */

/** D1 and Durable Object errors worth another try, as Cloudflare documents them. */
const TRANSIENT = [
  /Network connection lost/i,
  /reset because its code was updated/i,
  /storage caused object to be reset/i,
  /Cannot resolve D1 DB due to transient issue/i,
];

export function isTransient(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if ((error as { overloaded?: boolean }).overloaded === true || /overloaded/i.test(error.message)) return false;
  // An object that was reset (a restart, an abort) dropped the call: sending it again is safe,
  // since every call carries its write id and the ledger finishes each id once.
  if ((error as { durableObjectReset?: boolean }).durableObjectReset === true) return true;
  return (
    (error as { retryable?: boolean }).retryable === true || TRANSIENT.some((pattern) => pattern.test(error.message))
  );
}

export interface RetryOptions {
  /** Gives up when the next try would start past this time (ms since the epoch)... */
  deadline?: number;
  /** ...or after this many tries (4 by default when there is no deadline). */
  attempts?: number;
  /** What is thrown when the deadline passes. */
  late?: () => unknown;
  clock?: Clock;
}

/** The pause before try `attempt + 1`: jittered, doubling, at most 200 ms. */
const pause = (clock: Clock, attempt: number): Promise<void> =>
  clock.sleep(clock.random() * Math.min(200, 10 * 2 ** attempt));

/**
 * Runs `call` (safe to repeat: a read, or a write its ledger row finishes once) until it succeeds
 * or fails for a reason that is not transient; a transient failure is tried again after a pause.
 */
export async function retrying<T>(call: (attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const { deadline, clock = systemClock, late } = options;
  const attempts = options.attempts ?? (deadline === undefined ? 4 : Infinity);
  for (let attempt = 1; ; attempt++) {
    try {
      return await call(attempt);
    } catch (error) {
      if (!isTransient(error) || attempt >= attempts) throw error;
      if (deadline !== undefined && clock.now() >= deadline) throw late === undefined ? error : late();
      await pause(clock, attempt);
    }
  }
}

/** What an attempt of `recomputing` answers when it lost a race and must run again on what D1 holds now. */
export const AGAIN = Symbol('again');

/**
 * Runs a write's attempt (read, plan, commit) until it does not answer AGAIN: it lost a race to
 * another writer and nothing of it was written. A lost attempt learns the state it lost to, so
 * the next one runs at once: a pause would only let that state grow old. A write that keeps
 * losing (a twin, a record everyone writes) pauses a little from its fifth attempt on, so writers
 * that keep meeting do not race in a tight loop. Past `deadline`, `late()` is thrown.
 */
export async function recomputing<T>(
  attempt: (n: number) => Promise<T | typeof AGAIN>,
  { deadline = Infinity, late, clock = systemClock }: RetryOptions = {},
): Promise<T> {
  for (let n = 1; ; n++) {
    const result = await attempt(n);
    if (result !== AGAIN) return result;
    if (clock.now() >= deadline) throw late === undefined ? new Error('a write kept losing races') : late();
    if (n > 4) await clock.sleep(clock.random() * Math.min(200, 5 * 2 ** n));
  }
}
