import type { Context } from '../context.ts';
import { NO_ACCESS, recordAccess } from '../domain/access.ts';
import { patchProblems } from '../domain/patch.ts';
import { referenceClaims } from '../domain/references.ts';
import { rejected, unauthorized, type InputProblem } from '../http/errors.ts';
import type { RecordOut } from '../schemas/record.ts';
import type { KeyClaim } from '../storage/idempotency.ts';
import type { PatchContext } from '../storage/cached-reads.ts';
import { referenceProblems } from '../storage/references.ts';
import { referencedRefusal, refusedInTurn, restoreRefused } from './refusals.ts';
import { recordAnswer } from './answer.ts';
import { withKey } from './claim.ts';
import type { Write, WriteAnswer, WriteCall } from './write.ts';

type PatchWrite = Extract<Write, { kind: 'patch' }>;

/**
 * A patch, delete or restore of one record: decided on the caller, the record's facts and its
 * definition (what the Worker read for it, else the isolate's memory, else one D1 read), then
 * applied in the record's turn by its queue, which groups it with the patches waiting and
 * commits them in one D1 batch.
 */

/** A patch, delete or restore, start to end: read, claim its key, its turn, its answer. */
export async function patchWrite(context: Context, call: WriteCall, write: PatchWrite): Promise<WriteAnswer> {
  const known = await readForPatch(context, call, write);
  return withKey(context, call, known.caller?.userId ?? 0, write.patch, async (claim) =>
    recordAnswer(await patchInTurn(context, call, write, known, claim), context.meter.work()),
  );
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

/** Applies the write in the record's turn: the record as it answered, or the refusal thrown. */
async function patchInTurn(
  context: Context,
  call: WriteCall,
  write: PatchWrite,
  known: PatchContext,
  claim: KeyClaim | undefined,
): Promise<RecordOut> {
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

  const answer = await context.recordTurns.patch({
    recordId: write.recordId,
    writeId: call.id,
    def,
    patch: write.patch,
    userId: caller.userId,
    ...(snapshot === undefined ? {} : { snapshot }),
    ...(write.ifMatch === undefined ? {} : { ifMatch: write.ifMatch }),
    ...(claim === undefined ? {} : { claim }),
    ...(write.action === undefined ? {} : { action: write.action }),
  });
  if (answer.status === 200 && answer.record !== undefined) return answer.record;
  if (answer.problem?.code === 'record_referenced') throw await referencedRefusal(context, caller, write.recordId);
  if (answer.problem?.code === 'invalid_reference') {
    if (write.action === 'restore') throw rejected([restoreRefused]);
    const claims = referenceClaims(def, write.patch.fieldValues ?? [], snapshot?.fieldValues ?? [], '');
    throw rejected(await referenceProblems(context.primary, claims, caller.userId, '/fieldValues'));
  }
  throw refusedInTurn(answer.status, answer.problem);
}
