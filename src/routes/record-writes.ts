import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { hiddenNames, isLimited, shownTo, type Caller } from '../domain/access.ts';
import { unauthorized } from '../http/errors.ts';
import { answeredWorkspaces } from '../http/respond.ts';
import type { RecordOut } from '../schemas/record.ts';
import { admitBatch, admitCreate, admitPatch, admitUpsert } from '../write/admit.ts';
import { submit } from '../write/submit.ts';
import type { WriteAnswer, WriteCall } from '../write/write.ts';

/**
 * Every write of records: the Worker checks it (write/admit.ts), the engine runs it where it
 * belongs (write/submit.ts), and its answer, rendered where it ran, goes out as it is.
 */

async function written(context: Context, call: WriteCall): Promise<Response> {
  // The caller as the write was admitted: its answer is cut for them even if, by the time it comes
  // back, their key is gone or their tenant has moved on from this database.
  const caller = call.read?.caller ?? (await context.cached.callerOf(call.keyHash));
  if (caller === undefined) throw unauthorized();
  const answer: WriteAnswer = await submit(context, call);
  const body = answer.status < 300 ? shownBody(caller, call, answer.body) : answer.body;
  const response = new Response(body, { status: answer.status, headers: answer.headers });
  if (answer.workspaceIds !== undefined) answeredWorkspaces.set(response, answer.workspaceIds);
  return response;
}

/** POST /records/batch: create 1 to 20 records, all or nothing. */
export const createRecords = async (request: IRequest, context: Context): Promise<Response> =>
  written(context, await admitCreate(request, context));

/** PATCH /workspaces/{workspaceId}/records/{recordId}: patch one record, honouring If-Match. */
export const patchRecord = async (request: IRequest, context: Context): Promise<Response> =>
  written(context, await admitPatch(request, context));

/** DELETE /workspaces/{workspaceId}/records/{recordId}: a soft delete, in the record's turn like a patch. */
export const deleteRecord = async (request: IRequest, context: Context): Promise<Response> =>
  written(context, await admitPatch(request, context, 'delete'));

/** POST …/records/{recordId}/restore: the reverse of a delete. */
export const restoreRecord = async (request: IRequest, context: Context): Promise<Response> =>
  written(context, await admitPatch(request, context, 'restore'));

/** PATCH .../records/batch, with a workspace in the path or without: patch 1 to 20 records, all or nothing. */
export const patchRecords = async (request: IRequest, context: Context): Promise<Response> =>
  written(context, await admitBatch(request, context));

/** POST /objects/{objectId}/records/upsert: create or update 1 to 20 records by a unique field, all or nothing. */
export const upsertRecords = async (request: IRequest, context: Context): Promise<Response> =>
  written(context, await admitUpsert(request, context));

/**
 * A write's answer as its caller may see it: the engine renders records whole (the same bytes for a
 * retry and a key's replay), and fields the caller's role hides leave them here. A caller whose
 * roles hide nothing gets the bytes as they came.
 */
function shownBody(caller: Caller, call: WriteCall, body: Uint8Array): Uint8Array {
  if (!isLimited(caller)) return body;
  // Nothing to take out unless the answer names a field some grant of the caller's hides.
  const text = new TextDecoder().decode(body);
  if (![...hiddenNames(caller)].some((name) => text.includes(`"fieldName":"${name}"`))) return body;
  const workspaceId = 'workspaceId' in call.write ? call.write.workspaceId : undefined;
  const show = (record: RecordOut): RecordOut => shownTo(caller, record, workspaceId);
  const answer = JSON.parse(text) as RecordOut | { record: RecordOut }[];
  const shown = Array.isArray(answer) ? answer.map((item) => ({ ...item, record: show(item.record) })) : show(answer);
  return new TextEncoder().encode(JSON.stringify(shown));
}
