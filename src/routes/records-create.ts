import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { settle } from '../core/settle.ts';
import { keyHashOf } from '../http/auth.ts';
import { readJson } from '../http/body.ts';
import { json } from '../http/respond.ts';
import { keyRequest } from '../patching/idempotent.ts';
import { placedCreate } from '../patching/near.ts';

/** POST /records/batch: create 1 to 20 records, all or nothing. */
export async function createRecords(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const body = await settle(() => readJson(request));
  const written = await placedCreate(context, { keyHash, body, idempotency: keyRequest(request) });
  if ('replay' in written) return written.replay;
  return json(
    written.value.map((record) => ({ status: 'Succeeded', record })),
    201,
  );
}
