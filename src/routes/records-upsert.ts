import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { settle } from '../core/settle.ts';
import { keyHashOf } from '../http/auth.ts';
import { readJson } from '../http/body.ts';
import { pathIds } from '../http/params.ts';
import { json } from '../http/respond.ts';
import { keyRequest } from '../patching/idempotent.ts';
import { upsertRecords } from '../patching/upsert.ts';

/** POST /objects/{objectId}/records/upsert: create or update 1 to 20 records by a unique field, all or nothing. */
export async function upsertRecordsRoute(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { objectId } = pathIds(request.params, 'objectId');
  const body = await settle(() => readJson(request));
  const written = await upsertRecords(context, { keyHash, objectId, body, idempotency: keyRequest(request) });
  if ('replay' in written) return written.replay;
  return json(written.value.map(({ result, record }) => ({ status: 'Succeeded', result, record })));
}
