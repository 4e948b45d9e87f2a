export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Runs a step whose failure must wait until the caller is authenticated (401 comes first). */
export async function settle<T>(step: () => Promise<T>): Promise<Settled<T>> {
  try {
    return { ok: true, value: await step() };
  } catch (error) {
    return { ok: false, error };
  }
}
