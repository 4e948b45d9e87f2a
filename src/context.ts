import type { Env } from './env.ts';
import { Meter } from './storage/meter.ts';
import { Store } from './storage/store.ts';

/** What every handler receives beside the request. */
export interface Context {
  env: Env;
  store: Store;
  meter: Meter;
  requestId: string;
  waitUntil: (promise: Promise<unknown>) => void;
}

export function createContext(env: Env, requestId: string, ctx: ExecutionContext): Context {
  const meter = new Meter();
  return { env, meter, store: new Store(env.DB, meter), requestId, waitUntil: (p) => ctx.waitUntil(p) };
}
