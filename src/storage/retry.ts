/** D1 and Durable Object errors worth another try, as Cloudflare documents them; "overloaded" is never one. */
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

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs an idempotent call (a read, or a write guarded by version), retrying transient
 * failures with jittered exponential back-off: 4 attempts within about a second.
 */
export async function retrying<T>(call: () => Promise<T>, attempts = 4): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= attempts || !isTransient(error)) throw error;
      await sleep(Math.random() * 50 * 2 ** attempt);
    }
  }
}
