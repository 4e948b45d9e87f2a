import type { Caller } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import type { RecordFacts } from '../domain/patch.ts';

/**
 * How long an isolate may answer from memory what it read from D1 (at most 60 s is allowed): a
 * revoked key, a removed membership or a new object version takes effect within this time.
 */
export const CACHE_TTL_MS = 30_000;

/**
 * Entries that expire `ttlMs` after the read that produced them was issued (not when it came
 * back, so the bound holds for slow reads); past `capacity`, the least recently used go first.
 */
export class Expiring<K, V> {
  private readonly entries = new Map<K, { value: V; expires: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly capacity: number,
    private readonly now: () => number,
  ) {}

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    if (entry.expires <= this.now()) return undefined;
    this.entries.set(key, entry);
    return entry.value;
  }

  /**
   * Remembers `value` as read by a request issued at `issuedAt`. A read issued earlier than the
   * one already remembered never replaces it: it may predate a change the newer read saw.
   */
  set(key: K, value: V, issuedAt = this.now()): void {
    const expires = issuedAt + this.ttlMs;
    const held = this.entries.get(key);
    if (held !== undefined && held.expires > expires) return;
    this.entries.delete(key);
    this.entries.set(key, { value, expires });
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as K);
  }

  /** Forgets an entry at once (a key revoked by this isolate, a call an object could not admit). */
  delete(key: K): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * What one isolate remembers between requests. Records contribute only the facts that no
 * operation changes (which object, which workspaces, the owner); their state is always read.
 */
export class IsolateCache {
  /** The clock of every entry; tests move it to see entries expire. */
  now: () => number = () => Date.now();
  readonly callers = new Expiring<string, Caller>(CACHE_TTL_MS, 10_000, () => this.now());
  readonly objects = new Expiring<number, ObjectDef>(CACHE_TTL_MS, 1_000, () => this.now());
  readonly records = new Expiring<number, RecordFacts>(CACHE_TTL_MS, 50_000, () => this.now());
}

/** The cache of this isolate, shared by every request it serves. */
export const isolateCache = new IsolateCache();
