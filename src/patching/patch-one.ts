import type { Context } from '../context.ts';
import type { Settled } from '../core/settle.ts';
import { recordAccess } from '../domain/access.ts';
import { patchProblems } from '../domain/patch.ts';
import { busy, HttpError, outcomeUnknown, rejected, unauthorized, type InputProblem } from '../http/errors.ts';
import { fieldValueDuplicates, parseObject } from '../schemas/parse.ts';
import { PatchBody, type PatchIn, type RecordOut } from '../schemas/record.ts';
import type { PatchContext } from '../storage/recall.ts';
import { CALL_DEADLINE_MS } from '../turns.ts';
import { claimKey, holding, wellShaped, type KeyRequest, type Written } from './idempotent.ts';
import { patchInObject } from './objects.ts';

export interface PatchOneInput {
  keyHash: string;
  workspaceId: number;
  recordId: number;
  /** Absent for delete and restore, which take no body. */
  body: Settled<unknown>;
  ifMatch: string | undefined;
  idempotency: KeyRequest;
  /** A patch (absent), or a delete or restore (CONTRACT §12): all take the record's turn alike. */
  action?: 'delete' | 'restore';
}

/** The answer of a record object that did not apply a patch, as an HTTP error. */
export function refused(status: number, problem: InputProblem | undefined): HttpError {
  if (status === 503) return problem?.code === 'outcome_unknown' ? outcomeUnknown() : busy();
  if (status === 412) return new HttpError(412, 'precondition_failed', 'Precondition failed', 'If-Match does not match the current version.');
  return rejected(problem === undefined ? [] : [{ ...problem, status }]);
}

/**
 * SPEC 4.2 (and delete, restore): the caller, the record's facts and its definition (from the
 * isolate's memory, else one D1 read) decide everything that does not depend on the record's
 * turn; the record's object then applies the write in turn and stores it. The order of checks
 * is the contract's: 401, then the request's shape (400), then its Idempotency-Key (replay,
 * 409, 422), then the record (404, 403, 409, 422), then the turn (412, 503). A refusal is
 * never made on memory alone. `callId` names the object call and its change row: a coordinator
 * that runs this again under the same id (near.ts) finds it written instead of writing it twice.
 */
export async function patchOne(context: Context, input: PatchOneInput, callId: string = crypto.randomUUID()): Promise<Written<RecordOut>> {
  const parsed = input.body.ok ? parseObject(PatchBody, input.body.value, (body) => fieldValueDuplicates(body, '')) : undefined;
  let decided = await context.recall.patchContext(input.keyHash, input.recordId);
  if (decided.caller === undefined) throw unauthorized();
  const patch = wellShaped(input.body, parsed, input.idempotency);
  const held = await claimKey(context, input.idempotency, decided.caller.userId, patch);
  if ('replay' in held) return held;

  return holding(context, held.claim, async () => {
    let problems = judge(decided, input.workspaceId, patch, input.action);
    if (problems.length > 0 && decided.remembered) {
      decided = await context.recall.patchContext(input.keyHash, input.recordId, true);
      if (decided.caller === undefined) throw unauthorized();
      problems = judge(decided, input.workspaceId, patch, input.action);
    }
    const { caller, def, snapshot } = decided;
    if (problems.length > 0 || caller === undefined || def === undefined) throw rejected(problems);

    const call = {
      recordId: input.recordId,
      callId,
      def,
      patch,
      userId: caller.userId,
      ...(snapshot === undefined ? {} : { snapshot }),
      ...(input.ifMatch === undefined ? {} : { ifMatch: input.ifMatch }),
      ...(held.claim === undefined ? {} : { claim: held.claim }),
      ...(input.action === undefined ? {} : { action: input.action }),
    };
    const answer = await context.meter.durable(() => patchInObject(context.env, call, Date.now() + CALL_DEADLINE_MS));
    if (answer.status === 200 && answer.record !== undefined) return { value: answer.record };
    throw refused(answer.status, answer.problem);
  });
}

/** Delete and restore may act on a deleted record; a patch may not (409). */
function judge({ caller, facts, def }: PatchContext, workspaceId: number, patch: PatchIn, action?: 'delete' | 'restore'): InputProblem[] {
  const access = caller && facts ? recordAccess(caller, facts.sharedWorkspaceIds, workspaceId) : 'none';
  const seen = action !== undefined && facts !== undefined ? { ...facts, deleted: false } : facts;
  return patchProblems(seen, access, def, patch, '');
}
