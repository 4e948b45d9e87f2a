/// <reference types="node" />
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The simulator's world: one virtual clock, one seeded generator, and every source of time and
 * chance the service's modules reach for (Date.now, Math.random, setTimeout, crypto) answered
 * from them while a run is installed. Every piece of code runs as some actor (a Worker request,
 * one life of a record object); an actor that dies runs nothing more: its timers are dropped and
 * the replies it waits for never arrive, as with an object that workerd resets.
 */

/** A seeded generator (sfc32): the same seed, the same numbers, on every machine. */
export function generator(seed: number): () => number {
  let a = 0x9e3779b9;
  let b = 0x243f6a88;
  let c = 0xb7e15162;
  let d = seed >>> 0;
  const next = (): number => {
    a |= 0;
    b |= 0;
    c |= 0;
    d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  return next;
}

export interface Actor {
  name: string;
  dead: boolean;
}

interface Timer {
  at: number;
  seq: number;
  run: () => void;
  actor: Actor | undefined;
}

/** Virtual milliseconds since this epoch: a fixed date, so record times replay too. */
export const EPOCH = Date.UTC(2026, 10, 1);

export class World {
  now = 0;
  readonly random: () => number;
  private seq = 0;
  private readonly timers: Timer[] = [];
  private readonly cancelled = new Set<number>();
  readonly actors = new AsyncLocalStorage<Actor>();
  private restore: (() => void) | undefined;

  constructor(readonly seed: number) {
    this.random = generator(seed);
  }

  /** An integer in [low, high]. */
  between(low: number, high: number): number {
    return low + Math.floor(this.random() * (high - low + 1));
  }

  chance(p: number): boolean {
    return p > 0 && this.random() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)] as T;
  }

  actor(): Actor | undefined {
    return this.actors.getStore();
  }

  /** Runs `fn` after `ms` virtual milliseconds, as the actor calling this, unless it has died by then. */
  schedule(ms: number, run: () => void): number {
    const timer: Timer = { at: this.now + Math.max(0, ms), seq: ++this.seq, run, actor: this.actor() };
    // Timers stay sorted by (at, seq): equal times run in the order they were set.
    let i = this.timers.length;
    while (i > 0 && (this.timers[i - 1] as Timer).at > timer.at) i--;
    this.timers.splice(i, 0, timer);
    return timer.seq;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.schedule(ms, resolve));
  }

  /** Runs every timer, in time order, until none is left or `limit` virtual milliseconds pass. */
  async run(limit = 600_000): Promise<void> {
    const end = this.now + limit;
    const yieldToMicrotasks = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    await yieldToMicrotasks();
    while (this.timers.length > 0) {
      const at = (this.timers[0] as Timer).at;
      if (at > end) break;
      this.now = at;
      while (this.timers.length > 0 && (this.timers[0] as Timer).at === at) {
        const timer = this.timers.shift() as Timer;
        if (this.cancelled.delete(timer.seq)) continue;
        if (timer.actor?.dead === true) continue;
        if (timer.actor === undefined) timer.run();
        else this.actors.run(timer.actor, timer.run);
      }
      await yieldToMicrotasks();
    }
  }

  /** Answers Date.now, Math.random, setTimeout and crypto from this world until `uninstall()`. */
  install(): void {
    const saved = {
      now: Date.now,
      random: Math.random,
      setTimeout: globalThis.setTimeout,
      clearTimeout: globalThis.clearTimeout,
      crypto: Object.getOwnPropertyDescriptor(globalThis, 'crypto'),
      error: console.error,
      log: console.log,
    };
    // The service logs what it absorbs (a lost webhook wake-up, a refused write); a run judges by
    // its answers and its history, so those lines are shown only with SIM_TRACE.
    if (!process.env.SIM_TRACE) console.error = () => undefined;
    // Likewise what it logs of its work (a tenant switched, say).
    if (!process.env.SIM_TRACE) console.log = () => undefined;
    Date.now = () => EPOCH + Math.floor(this.now);
    Math.random = this.random;
    globalThis.setTimeout = ((run: () => void, ms?: number) => this.schedule(ms ?? 0, run)) as typeof setTimeout;
    globalThis.clearTimeout = ((id: number) => void this.cancelled.add(id)) as typeof clearTimeout;
    Object.defineProperty(globalThis, 'crypto', { value: this.crypto(), configurable: true, writable: true });
    this.restore = () => {
      Date.now = saved.now;
      Math.random = saved.random;
      globalThis.setTimeout = saved.setTimeout;
      globalThis.clearTimeout = saved.clearTimeout;
      if (saved.crypto !== undefined) Object.defineProperty(globalThis, 'crypto', saved.crypto);
      console.error = saved.error;
      console.log = saved.log;
    };
  }

  uninstall(): void {
    this.restore?.();
    this.restore = undefined;
  }

  /**
   * Web Crypto as the service uses it, seeded and synchronous: Node's own subtle crypto settles
   * on a thread pool, at a moment no seed decides.
   */
  private crypto(): Crypto {
    const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => this.between(0, 255));
    const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
    const buffer = (data: BufferSource): Buffer =>
      ArrayBuffer.isView(data)
        ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
        : Buffer.from(data as ArrayBuffer);
    const subtle = {
      digest: (_algorithm: string, data: BufferSource) =>
        Promise.resolve(new Uint8Array(createHash('sha256').update(buffer(data)).digest()).buffer),
      // A key carries its bytes: the service keeps imported keys across runs.
      importKey: (_format: string, raw: BufferSource) => Promise.resolve({ raw: Buffer.from(buffer(raw)) }),
      sign: (_algorithm: unknown, key: { raw: Buffer }, data: BufferSource) =>
        Promise.resolve(new Uint8Array(createHmac('sha256', key.raw).update(buffer(data)).digest()).buffer),
      timingSafeEqual: (a: BufferSource, b: BufferSource) => {
        const [x, y] = [buffer(a), buffer(b)];
        if (x.length !== y.length) throw new TypeError('Input buffers must have the same byte length');
        return timingSafeEqual(x, y);
      },
    };
    return {
      subtle,
      getRandomValues: <T extends ArrayBufferView | null>(array: T): T => {
        if (array !== null)
          new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(bytes(array.byteLength));
        return array;
      },
      randomUUID: () => {
        const h = hex(bytes(16));
        const uuid = `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
        return uuid as `${string}-${string}-${string}-${string}-${string}`;
      },
    } as unknown as Crypto;
  }
}
