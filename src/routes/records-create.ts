import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { planCreate } from '../domain/create.ts';
import { bearerToken, sha256Hex } from '../http/auth.ts';
import { invalidBody, rejected, unauthorized } from '../http/errors.ts';
import { readJson } from '../http/body.ts';
import { json } from '../http/respond.ts';
import { CreateItem } from '../schemas/record.ts';
import { fieldValueDuplicates, parseBatch, pointer } from '../schemas/parse.ts';
import { settle } from './settle.ts';

/** SPEC 4.1: POST /records/batch. One read round trip, one write round trip. */
export async function createRecords(request: IRequest, { store }: Context): Promise<Response> {
  const keyHash = await sha256Hex(bearerToken(request));
  const body = await settle(() => readJson(request));
  const parsed = body.ok
    ? parseBatch(CreateItem, body.value, (items) => items.flatMap((item, i) => fieldValueDuplicates(item, pointer('', i))))
    : undefined;
  const objectIds = parsed?.ok === true ? [...new Set(parsed.value.map((item) => item.objectId))] : [];
  const { caller, objects } = await store.createContext(keyHash, objectIds);
  if (caller === undefined) throw unauthorized();
  if (!body.ok) throw body.error;
  if (parsed?.ok !== true) throw invalidBody(parsed?.problems ?? []);

  const plan = planCreate(caller, parsed.value, objects, Date.now());
  if (!plan.ok) throw rejected(plan.problems);
  const records = await store.insertRecords(plan.value);
  return json(records.map((record) => ({ status: 'Succeeded', record })), 201);
}
