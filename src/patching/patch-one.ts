import type { Context } from '../context.ts';
import { recordAccess } from '../domain/access.ts';
import { patchProblems } from '../domain/patch.ts';
import { HttpError, invalidBody, rejected, unauthorized, type InputProblem } from '../http/errors.ts';
import { fieldValueDuplicates, parseObject } from '../schemas/parse.ts';
import { PatchBody, type RecordOut } from '../schemas/record.ts';
import type { Settled } from '../routes/settle.ts';
import { patchInObject } from './objects.ts';

export interface PatchOneInput {
  keyHash: string;
  workspaceId: number;
  recordId: number;
  body: Settled<unknown>;
  ifMatch: string | undefined;
}

export const busy = (): HttpError =>
  new HttpError(503, 'unavailable', 'Record busy', 'The record could not take this request within 10 seconds; nothing was written.', undefined, {
    'Retry-After': '1',
  });

/** The answer of a record object that did not apply a patch, as an HTTP error. */
export function refused(status: number, problem: InputProblem | undefined): HttpError {
  if (status === 503) return busy();
  if (status === 412) return new HttpError(412, 'precondition_failed', 'Precondition failed', 'If-Match does not match the current version.');
  return rejected(problem === undefined ? [] : [problem]);
}

/**
 * SPEC 4.2: one D1 read (caller, record, definition) decides everything that does not depend
 * on the record's turn; the record's object then applies the patch in turn and writes it.
 */
export async function patchOne({ env, store, meter }: Context, input: PatchOneInput): Promise<RecordOut> {
  const parsed = input.body.ok ? parseObject(PatchBody, input.body.value, (body) => fieldValueDuplicates(body, '')) : undefined;
  const { caller, records, objects } = await store.recordContext(input.keyHash, [input.recordId]);
  if (caller === undefined) throw unauthorized();
  if (!input.body.ok) throw input.body.error;
  if (parsed?.ok !== true) throw invalidBody(parsed?.problems ?? []);

  const record = records.get(input.recordId);
  const def = record && objects.get(record.objectId);
  const access = record ? recordAccess(caller, record.sharedWorkspaceIds, input.workspaceId) : 'none';
  const problems = patchProblems(record, access, def, parsed.value, '');
  if (problems.length > 0 || record === undefined || def === undefined) throw rejected(problems);

  const ifMatch = input.ifMatch === undefined ? {} : { ifMatch: input.ifMatch };
  const answer = await meter.durable(() => patchInObject(env, { snapshot: record, def, patch: parsed.value, userId: caller.userId, ...ifMatch }));
  if (answer.status === 200 && answer.record !== undefined) return answer.record;
  throw refused(answer.status, answer.problem);
}
