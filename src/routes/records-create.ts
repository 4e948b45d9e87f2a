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

/** SPEC 4.1: POST /records/batch. One read round trip (none when the isolate remembers), one write. */
export async function createRecords(request: IRequest, { store, recall }: Context): Promise<Response> {
  const keyHash = await sha256Hex(bearerToken(request));
  const body = await settle(() => readJson(request));
  const parsed = body.ok
    ? parseBatch(CreateItem, body.value, (items) => items.flatMap((item, i) => fieldValueDuplicates(item, pointer('', i))))
    : undefined;
  const objectIds = parsed?.ok === true ? [...new Set(parsed.value.map((item) => item.objectId))] : [];
  const context = await recall.createContext(keyHash, objectIds);
  if (context.caller === undefined) throw unauthorized();
  if (!body.ok) throw body.error;
  if (parsed?.ok !== true) throw invalidBody(parsed?.problems ?? []);

  let plan = planCreate(context.caller, parsed.value, context.objects, Date.now());
  if (!plan.ok && context.remembered) {
    // Refuse only on what D1 says now: the key, a membership or a field may be new.
    const fresh = await recall.createContext(keyHash, objectIds, true);
    if (fresh.caller === undefined) throw unauthorized();
    plan = planCreate(fresh.caller, parsed.value, fresh.objects, Date.now());
  }
  if (!plan.ok) throw rejected(plan.problems);
  const records = await store.insertRecords(plan.value);
  return json(records.map((record) => ({ status: 'Succeeded', record })), 201);
}
