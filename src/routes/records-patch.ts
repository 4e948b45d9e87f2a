import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { settle } from '../core/settle.ts';
import { keyHashOf } from '../http/auth.ts';
import { readJson } from '../http/body.ts';
import { pathIds } from '../http/params.ts';
import { json, recordResponse } from '../http/respond.ts';
import { keyRequest } from '../patching/idempotent.ts';
import { placedPatchBatch, placedPatchOne } from '../patching/near.ts';

/** PATCH /workspaces/{workspaceId}/records/{recordId}: patch one record, honouring If-Match. */
export async function patchRecord(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { workspaceId, recordId } = pathIds(request.params, 'workspaceId', 'recordId');
  const body = await settle(() => readJson(request));
  const ifMatch = request.headers.get('If-Match') ?? undefined;
  const written = await placedPatchOne(context, {
    keyHash,
    workspaceId,
    recordId,
    body,
    ifMatch,
    idempotency: keyRequest(request),
  });
  return 'replay' in written ? written.replay : recordResponse(written.value);
}

/** PATCH .../records/batch, with a workspace in the path or without: patch 1 to 20 records, all or nothing. */
export async function patchRecords(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const workspaceId =
    request.params.workspaceId === undefined ? undefined : pathIds(request.params, 'workspaceId').workspaceId;
  const body = await settle(() => readJson(request));
  const written = await placedPatchBatch(context, { keyHash, workspaceId, body, idempotency: keyRequest(request) });
  if ('replay' in written) return written.replay;
  return json(written.value.map((record) => ({ status: 'Succeeded', record })));
}
