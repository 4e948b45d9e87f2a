import type { IRequest } from 'itty-router';
import * as v from 'valibot';
import type { Context } from '../context.ts';
import { settle } from '../core/settle.ts';
import { keyHashOf } from '../http/auth.ts';
import { readJson } from '../http/body.ts';
import { invalidBody } from '../http/errors.ts';
import { pathIds } from '../http/params.ts';
import { recordResponse } from '../http/respond.ts';
import { keyRequest } from '../patching/idempotent.ts';
import { placedPatchOne } from '../patching/near.ts';
import { parseObject } from '../schemas/parse.ts';

/** Delete and restore take no body: none at all, or `{}`. */
export const EmptyBody = v.strictObject({});

async function emptyBody(request: Request): Promise<Record<string, never>> {
  if (request.body === null || request.headers.get('Content-Length') === '0') return {};
  const parsed = parseObject(EmptyBody, await readJson(request));
  if (!parsed.ok) throw invalidBody(parsed.problems);
  return {};
}

/**
 * DELETE /workspaces/{workspaceId}/records/{recordId} (soft) and
 * POST …/{recordId}/restore. Both take the record's turn in its object like a patch.
 */
function lifecycle(action: 'delete' | 'restore') {
  return async (request: IRequest, context: Context): Promise<Response> => {
    const keyHash = await keyHashOf(request);
    const { workspaceId, recordId } = pathIds(request.params, 'workspaceId', 'recordId');
    const body = await settle(() => emptyBody(request));
    const ifMatch = request.headers.get('If-Match') ?? undefined;
    const written = await placedPatchOne(context, {
      keyHash,
      workspaceId,
      recordId,
      body,
      ifMatch,
      idempotency: keyRequest(request),
      action,
    });
    return 'replay' in written ? written.replay : recordResponse(written.value);
  };
}

export const deleteRecord = lifecycle('delete');
export const restoreRecord = lifecycle('restore');
