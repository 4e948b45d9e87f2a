import { recordAccess, type Caller } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import type { RecordFacts } from '../domain/patch.ts';
import type { RecordOut } from '../schemas/record.ts';
import type { IsolateCache, Issued } from './isolate-cache.ts';
import type { RecordContext, Store } from './store.ts';
import { tenantOfId } from '../domain/tenant.ts';

/** Whether an answer came from the isolate's memory rather than from D1 just now. */
interface Remembered {
  remembered: boolean;
}

export interface CreateContext extends Remembered {
  caller: Caller | undefined;
  objects: Map<number, ObjectDef>;
}

/** What a patch of one record needs to be decided in the Worker. */
export interface PatchContext extends Remembered {
  caller: Caller | undefined;
  facts: RecordFacts | undefined;
  def: ObjectDef | undefined;
  /** The record as read for this request; absent when it came from memory or does not exist. */
  snapshot: RecordOut | undefined;
}

/**
 * The reads of the create and patch paths, answered from the isolate's memory when it holds
 * everything they need, else read from D1 in one round trip (which refreshes the memory).
 * Memory may only say yes: a caller refuses a request decided on remembered data only after
 * asking again with `fresh`, so a new membership or field works at once, and only a removal
 * (a key, a membership, a field) can take up to CACHE_TTL_MS to be seen. Unknown keys, records
 * and objects are never remembered. The memory is the isolate's, shared by every tenant: it
 * answers only with callers, records and objects of the tenant the request was routed to, so
 * another tenant's id is never told apart from a missing one by what memory held.
 */
export class CachedReads {
  constructor(
    private readonly store: Store,
    private readonly cache: IsolateCache,
    private readonly tenant: number,
  ) {}

  /** Whether memory holds the caller behind `keyHash` (someone this isolate saw authenticate lately). */
  knowsCaller(keyHash: string): boolean {
    return this.caller(keyHash) !== undefined;
  }

  /** The caller behind `keyHash`: remembered, else read (one round trip); undefined for no caller. */
  async callerOf(keyHash: string): Promise<Caller | undefined> {
    return this.caller(keyHash) ?? (await this.createContext(keyHash, [])).caller;
  }

  /** The caller memory holds behind `keyHash`, if it is one of the tenant's users. */
  private caller(keyHash: string): Caller | undefined {
    const caller = this.cache.callers.get(keyHash);
    return caller !== undefined && tenantOfId(caller.userId) === this.tenant ? caller : undefined;
  }

  /** What memory holds of a record, if it is the tenant's. */
  private facts(recordId: number): RecordFacts | undefined {
    return tenantOfId(recordId) === this.tenant ? this.cache.records.get(recordId) : undefined;
  }

  /**
   * Whether memory says the caller sees the record under `workspaceId` (it may be wrong only by
   * saying yes, which a write decides again on a fresh read). A record the caller cannot see, a
   * record nobody used lately and an id never issued all say no alike.
   */
  seesRecord(keyHash: string, recordId: number, workspaceId: number): boolean {
    const caller = this.caller(keyHash);
    const facts = this.facts(recordId);
    if (caller === undefined || facts === undefined || this.cache.objects.get(facts.objectId) === undefined)
      return false;
    return recordAccess(caller, facts, workspaceId).read;
  }

  async createContext(keyHash: string, objectIds: readonly number[], fresh = false): Promise<CreateContext> {
    const caller = fresh ? undefined : this.caller(keyHash);
    const objects = caller === undefined ? undefined : this.remembered(objectIds);
    if (caller !== undefined && objects?.size === objectIds.length) return { caller, objects, remembered: true };
    const issued = this.cache.issue();
    const read = await this.store.createContext(keyHash, objectIds);
    this.remember(issued, keyHash, read.caller, read.objects);
    return { ...read, remembered: false };
  }

  async patchContext(keyHash: string, recordId: number, fresh = false): Promise<PatchContext> {
    const caller = fresh ? undefined : this.caller(keyHash);
    const facts = this.facts(recordId);
    const def = facts && this.cache.objects.get(facts.objectId);
    if (caller !== undefined && def !== undefined) return { caller, facts, def, snapshot: undefined, remembered: true };
    const read = await this.recordContext(keyHash, [recordId]);
    const snapshot = read.records.get(recordId);
    return {
      caller: read.caller,
      facts: snapshot,
      def: snapshot && read.objects.get(snapshot.objectId),
      snapshot,
      remembered: false,
    };
  }

  /** A record if the caller may read it (under `workspaceId` when given): always read from D1, and remembered. */
  readableRecord(keyHash: string, recordId: number, workspaceId: number | undefined): Promise<RecordContext> {
    return this.rememberedRead(keyHash, () => this.store.readableRecord(keyHash, recordId, workspaceId));
  }

  /** Always read from D1 (reads and batches need the records' state), and remembered. */
  recordContext(keyHash: string, recordIds: readonly number[]): Promise<RecordContext> {
    return this.rememberedRead(keyHash, () => this.store.recordContext(keyHash, recordIds));
  }

  /**
   * A read of records with their caller, remembered. Records in use (read or patched) earn a place;
   * new ones do not, lest a burst of creates push out the records being worked on.
   */
  private async rememberedRead(keyHash: string, read: () => Promise<RecordContext>): Promise<RecordContext> {
    const issued = this.cache.issue();
    const context = await read();
    this.remember(issued, keyHash, context.caller, context.objects);
    for (const record of context.records.values()) this.cache.records.set(record.id, factsOf(record), issued);
    return context;
  }

  private remembered(objectIds: readonly number[]): Map<number, ObjectDef> {
    return new Map(
      objectIds.flatMap((id) => {
        const def = tenantOfId(id) === this.tenant ? this.cache.objects.get(id) : undefined;
        return def === undefined ? [] : [[id, def] as const];
      }),
    );
  }

  private remember(
    issued: Issued,
    keyHash: string,
    caller: Caller | undefined,
    objects: ReadonlyMap<number, ObjectDef>,
  ): void {
    if (caller !== undefined) this.cache.rememberCaller(keyHash, caller, issued);
    for (const def of objects.values()) this.cache.objects.set(def.id, def, issued);
  }
}

const factsOf = ({ id, objectId, sharedWorkspaceIds, ownedBy, deleted }: RecordOut): RecordFacts => ({
  id,
  objectId,
  sharedWorkspaceIds,
  ownedBy,
  deleted,
});
