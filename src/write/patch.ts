import type { Context } from '../context.ts';
import { NO_ACCESS, recordAccess, type Caller } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { patchProblems } from '../domain/patch.ts';
import { referenceClaims } from '../domain/references.ts';
import { rejected, unauthorized, type InputProblem } from '../http/errors.ts';
import type { RecordOut } from '../schemas/record.ts';
import type { PatchContext } from '../storage/cached-reads.ts';
import { recordAnswer } from './answer.ts';
import type { WriteRun } from './kind.ts';
import type { Write, WriteCall } from './write.ts';

type PatchWrite = Extract<Write, { kind: 'patch' }>;

/**
 * A patch, delete or restore of one record: decided on the caller, the record's facts and its
 * definition (what the Worker read for it, else the isolate's memory, else one D1 read), then
 * applied in the record's turn by its queue, which groups it with the patches waiting and
 * commits them in one D1 batch.
 */

/** A patch, delete or restore, read: decided here, applied in its record's turn. */
export async function patchRun(
  context: Context,
  call: WriteCall,
  write: PatchWrite,
): Promise<WriteRun<Decided, RecordOut>> {
  const known = await readForPatch(context, call, write);
  const caller = known.caller as Caller;
  return {
    userId: caller.userId,
    body: write.patch,
    decide: () => decide(context, call, write, known),
    commit: {
      turn: ({ caller: { userId }, def, snapshot }, claim) =>
        context.recordTurns.patch({
          recordId: write.recordId,
          writeId: call.id,
          def,
          patch: write.patch,
          userId,
          ...(snapshot === undefined ? {} : { snapshot }),
          ...(write.ifMatch === undefined ? {} : { ifMatch: write.ifMatch }),
          ...(claim === undefined ? {} : { claim }),
          ...(write.action === undefined ? {} : { action: write.action }),
        }),
      applied: (record) => record,
    },
    claims: ({ caller, def, snapshot }) => ({
      caller,
      fallback: '/fieldValues',
      record: { id: write.recordId, restore: write.action === 'restore' },
      references: () => referenceClaims(def, write.patch.fieldValues ?? [], snapshot?.fieldValues ?? [], ''),
      unique: () => [],
    }),
    answer: recordAnswer,
  };
}

/** What a patch is decided on. The caller is known: none answers 401. */
async function readForPatch(context: Context, call: WriteCall, write: PatchWrite): Promise<PatchContext> {
  const read = call.read;
  const snapshot = read?.records.find((record) => record.id === write.recordId);
  const known: PatchContext =
    read === undefined
      ? await context.cached.patchContext(call.keyHash, write.recordId)
      : {
          caller: read.caller,
          facts: snapshot,
          def: read.objects.find((def) => def.id === snapshot?.objectId),
          snapshot,
          remembered: false,
        };
  if (known.caller === undefined) throw unauthorized();
  return known;
}

/** Everything a patch can be refused for before its turn; delete and restore may act on a deleted record. */
function problemsOf({ caller, facts, def }: PatchContext, write: PatchWrite): InputProblem[] {
  const access = caller && facts ? recordAccess(caller, facts, write.workspaceId) : NO_ACCESS;
  const seen = write.action !== undefined && facts !== undefined ? { ...facts, deleted: false } : facts;
  return patchProblems(seen, access, def, write.patch, '', write.action);
}

/** A patch decided: who writes it, on which definition, over the record as it was read (if it was). */
interface Decided {
  caller: Caller;
  def: ObjectDef;
  snapshot?: RecordOut;
}

/** Decides the patch before its turn; a refusal made on the isolate's memory alone is made again on a fresh read. */
async function decide(context: Context, call: WriteCall, write: PatchWrite, known: PatchContext): Promise<Decided> {
  let decided = known;
  let problems = problemsOf(decided, write);
  if (problems.length > 0 && decided.remembered) {
    // Refuse only on what D1 says now: a membership or a field may be new.
    decided = await context.cached.patchContext(call.keyHash, write.recordId, true);
    if (decided.caller === undefined) throw unauthorized();
    problems = problemsOf(decided, write);
  }
  const { caller, def, snapshot } = decided;
  if (problems.length > 0 || caller === undefined || def === undefined) throw rejected(problems);
  return snapshot === undefined ? { caller, def } : { caller, def, snapshot };
}
