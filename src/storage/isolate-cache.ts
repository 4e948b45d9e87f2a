import type { Caller } from '../domain/access.ts';
import { tenantOfId } from '../domain/tenant.ts';
import type { ObjectDef } from '../domain/definition.ts';
import type { RecordFacts } from '../domain/patch.ts';
import { Tombstones, type Issued } from './tombstones.ts';

export type { Issued };

/**
 * How long an isolate may answer from memory what it read from D1 (at most 60 s is allowed): a
 * revoked key, a removed membership or a new object version takes effect within this time.
 */
export const CACHE_TTL_MS = 30_000;

/**
 * Entries that expire `ttlMs` after the read that produced them was issued (not when it came
 * back, so the bound holds for slow reads); past `capacity`, the least recently used go first.
 * A revoked key is never filled again by a read issued before the revocation.
 */
export class Expiring<K, V> {
  private readonly entries = new Map<K, { value: V; expires: number }>();
  private readonly revoked: Tombstones<K>;
  private seq = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly capacity: number,
    private readonly now: () => number,
    /** Issues `seq` numbers; caches that share one can compare reads across them. */
    private readonly sequence: () => number = () => ++this.seq,
  ) {
    this.revoked = new Tombstones(ttlMs, capacity, now);
  }

  /** Marks the start of a read whose result may be remembered. */
  issue(): Issued {
    return { at: this.now(), seq: this.sequence() };
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    if (entry.expires <= this.now()) return undefined;
    this.entries.set(key, entry);
    return entry.value;
  }

  /**
   * Remembers `value` as read by a request issued at `issued`. A read that has already expired,
   * that predates a revocation of `key`, or that was issued earlier than the one already
   * remembered (it may predate a change the newer read saw) is ignored.
   */
  set(key: K, value: V, issued: Issued = this.issue()): void {
    const expires = issued.at + this.ttlMs;
    if (expires <= this.now() || this.revoked.blocks(key, issued)) return;
    const held = this.entries.get(key);
    if (held !== undefined && held.expires > expires) return;
    this.entries.delete(key);
    this.entries.set(key, { value, expires });
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as K);
  }

  /** Forgets an entry at once, without barring it (a call an object could not admit). */
  delete(key: K): void {
    this.entries.delete(key);
  }

  /** Forgets an entry and refuses any fill of it by a read issued before now (a revoked key). */
  revoke(key: K): void {
    this.entries.delete(key);
    this.revoked.add(key, this.sequence());
  }

  /** The keys whose remembered values satisfy `test`. */
  keysWhere(test: (value: V) => boolean): K[] {
    return [...this.entries].flatMap(([key, entry]) => (test(entry.value) ? [key] : []));
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * What one isolate remembers between requests. Records contribute only the facts that no
 * operation changes (which object, which workspaces, the owner); their state is always read.
 * Every read that may fill it takes an `issue()` first: a revocation orders itself after every
 * read issued before it, so a reply that D1 gave before a key was revoked or a member removed,
 * but that arrives after, never puts the key or the membership back.
 */
export class IsolateCache {
  /** The clock of every entry; tests move it to see entries expire. */
  now: () => number = () => Date.now();
  private seq = 0;
  private readonly sequence = (): number => ++this.seq;
  readonly callers = new Expiring<string, Caller>(CACHE_TTL_MS, 10_000, () => this.now(), this.sequence);
  readonly objects = new Expiring<number, ObjectDef>(CACHE_TTL_MS, 1_000, () => this.now(), this.sequence);
  readonly records = new Expiring<number, RecordFacts>(CACHE_TTL_MS, 50_000, () => this.now(), this.sequence);
  /** Users whose memberships changed: their callers read before the change are not remembered. */
  private readonly users = new Tombstones<number>(CACHE_TTL_MS, 10_000, () => this.now());

  issue(): Issued {
    return { at: this.now(), seq: this.sequence() };
  }

  /** Remembers the caller behind a key, unless the key or the user's memberships changed since `issued`. */
  rememberCaller(keyHash: string, caller: Caller, issued: Issued): void {
    if (this.users.blocks(caller.userId, issued)) return;
    this.callers.set(keyHash, caller, issued);
  }

  /** A revoked key: forgotten, and no read issued before now remembers it again. */
  revokeKey(keyHash: string): void {
    this.callers.revoke(keyHash);
  }

  /** A user's memberships changed (removed, or a role changed): every key of theirs is read afresh. */
  revokeUser(userId: number): void {
    for (const keyHash of this.callers.keysWhere((caller) => caller.userId === userId)) this.callers.revoke(keyHash);
    this.users.add(userId, this.sequence());
  }

  /** A defined role changed or went: every caller holding it is read afresh. */
  revokeRole(roleId: number): void {
    const holds = (caller: Caller): boolean =>
      [...caller.roles.values()].some((grant) => typeof grant !== 'string' && grant.id === roleId);
    for (const keyHash of this.callers.keysWhere(holds)) this.callers.revoke(keyHash);
  }

  /** An object's definition changed: this isolate reads it afresh (others within the memory's 30 s). */
  forgetObject(objectId: number): void {
    this.objects.revoke(objectId);
  }

  /** A tenant left where this isolate thought it was (deleted, or moved): every key of its users is read afresh. */
  revokeTenant(tenantId: number): void {
    for (const keyHash of this.callers.keysWhere((caller) => tenantOfId(caller.userId) === tenantId))
      this.callers.revoke(keyHash);
  }
}

/** The cache of this isolate, shared by every request it serves. */
export const isolateCache = new IsolateCache();
