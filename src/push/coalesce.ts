/**
 * Wake-ups sent at most once at a time per key, none lost: `send(key)` runs for a key asked
 * while no send of it is under way; a key asked during a send is sent once more when that send
 * ends (once, however often it was asked meanwhile), so what was asked for after a send started
 * is always followed by a send that starts after it. Under load a workspace's writes thus cost
 * about one wake-up per round trip instead of one each. The promise an ask gets ends when the
 * send that covers it ends; `send` reports its own failures, which end nothing here.
 */
export function coalesced<K>(send: (key: K) => Promise<void>): (key: K) => Promise<void> {
  const underWay = new Map<K, { again: boolean; done: Promise<void> }>();
  return (key) => {
    const busy = underWay.get(key);
    if (busy !== undefined) {
      busy.again = true;
      return busy.done;
    }
    const state = { again: true, done: Promise.resolve() };
    underWay.set(key, state);
    state.done = (async () => {
      try {
        while (state.again) {
          state.again = false;
          try {
            await send(key);
          } catch {
            // `send` reports its own failures; the asks it covered are over either way.
          }
        }
      } finally {
        underWay.delete(key);
      }
    })();
    return state.done;
  };
}
