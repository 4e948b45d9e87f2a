import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { DEFAULT_TENANT } from '../domain/tenant.ts';
import { readJson } from '../http/body.ts';
import { HttpError, invalidBody, notFound, rejected } from '../http/errors.ts';
import { pathIds } from '../http/params.ts';
import { json } from '../http/respond.ts';
import type { MoveStep } from '../tenancy/move-steps.ts';
import { MoveInput } from '../schemas/admin.ts';
import { parseObject } from '../schemas/parse.ts';
import { Catalog } from '../tenancy/catalog.ts';
import { Moves, type MoveRow } from '../tenancy/moves.ts';
import { databaseNamed, databaseNames } from '../tenancy/routes.ts';
import { onPrimary } from '../storage/sessions.ts';
import { keyHeader, reused } from '../write/claim.ts';
import { requireOperator } from './tenants.ts';

/**
 * Moves of a tenant to another database (the operator's API): started here, run by the tenant's
 * object (src/tenancy/move-steps.ts), read and cancelled here.
 */

const movesOf = ({ env, meter }: Context): Moves => new Moves(onPrimary(env.DB, meter), meter);

const conflict = (detail: string, headers: Record<string, string> = {}): HttpError =>
  new HttpError(409, { code: 'conflict', detail, headers });

const pathOf = (move: MoveRow): string => `/tenants/${move.tenantId}/moves/${move.id}`;

function moveOut(move: MoveRow) {
  const { id, from, to, status, rowsCopied, startedAt, finishedAt, failure } = move;
  return {
    id,
    from,
    to,
    status,
    rowsCopied,
    startedAt,
    ...(finishedAt === null ? {} : { finishedAt }),
    ...(failure === null ? {} : { failure }),
  };
}

/**
 * POST /tenants/{tenantId}/move: 202 and where to follow it. One move of a tenant at a time, never
 * of the default tenant (whose requests never read the catalog), nor to the database it is on.
 */
export async function startMove(request: IRequest, context: Context): Promise<Response> {
  await requireOperator(request, context);
  const { tenantId } = pathIds(request.params, 'tenantId');
  const key = keyHeader(request);
  const parsed = parseObject(MoveInput, await readJson(request));
  if (!parsed.ok || key.problems.length > 0)
    throw invalidBody([...(parsed.ok ? [] : parsed.problems), ...key.problems]);
  const { database } = parsed.value;
  const moves = movesOf(context);
  // A keyed move started already answers as it first did; the same key with another database is 422.
  const first = key.key === undefined ? undefined : await moves.keyed(tenantId, key.key.key);
  if (first !== undefined) {
    if (first.to !== database) throw reused();
    const answer = { ...first, status: 'copying' as const, rowsCopied: 0, finishedAt: null, failure: null };
    return json(moveOut(answer), 202, { Location: pathOf(first), 'Idempotent-Replayed': 'true' });
  }
  const tenant = await new Catalog(onPrimary(context.env.DB, context.meter), context.meter).get(tenantId);
  if (tenant === undefined) throw notFound('Tenant');
  if (databaseNamed(context.env, database) === undefined)
    throw rejected([
      { pointer: '/database', code: 'unknown_database', message: `expected one of ${databaseNames(context.env)}` },
    ]);
  if (tenantId === DEFAULT_TENANT) throw conflict('The default tenant stays on DB.');
  const current = await moves.current(tenantId);
  if (current !== undefined)
    throw conflict(`The tenant is moving already: ${pathOf(current)}.`, { Location: pathOf(current) });
  if (tenant.status !== 'active') throw conflict(`The tenant is ${tenant.status}.`);
  if (tenant.database === database) throw conflict(`The tenant is on ${database} already.`);
  const begin: MoveStep = { phase: 'begin' };
  const id = await moves
    .start(tenantId, tenant.database, database, Date.now(), JSON.stringify(begin), key.key?.key ?? null)
    .catch((error: unknown) => {
      // Two moves started at once: the one-at-a-time index refuses the second.
      if (error instanceof Error && /UNIQUE constraint failed/.test(error.message)) return undefined;
      throw error;
    });
  const move = id === undefined ? undefined : await moves.get(id);
  if (move === undefined) throw conflict('The tenant changed as the move started; read it and try again.');
  await wake(context, move);
  return json(moveOut(move), 202, { Location: pathOf(move) });
}

/** Tells the tenant's object to run the move; a wake-up lost is made good by the Cron Trigger. */
async function wake(context: Context, move: MoveRow): Promise<void> {
  try {
    await context.env.TENANTS.getByName(String(move.tenantId)).move(move.id);
  } catch (error) {
    console.error(JSON.stringify({ message: 'a move was not woken', moveId: move.id, error: String(error) }));
  }
}

/** The move, if it is this tenant's: another tenant's move id answers as a missing one. */
async function theMove(request: IRequest, context: Context): Promise<{ move: MoveRow; moves: Moves }> {
  await requireOperator(request, context);
  const { tenantId, moveId } = pathIds(request.params, 'tenantId', 'moveId');
  const moves = movesOf(context);
  const move = await moves.get(moveId);
  if (move === undefined || move.tenantId !== tenantId) throw notFound('Move');
  return { move, moves };
}

/** GET /tenants/{tenantId}/moves/{moveId}. */
export async function getMove(request: IRequest, context: Context): Promise<Response> {
  const { move } = await theMove(request, context);
  return json(moveOut(move));
}

/**
 * DELETE /tenants/{tenantId}/moves/{moveId}: cancels a move that is still copying (nothing
 * changes; the partial copy leaves the target in the background). Cancelling again answers the
 * same; a move that has switched (or ended otherwise) is 409.
 */
export async function cancelMove(request: IRequest, context: Context): Promise<Response> {
  const key = keyHeader(request);
  if (key.problems.length > 0) throw invalidBody(key.problems);
  const { move, moves } = await theMove(request, context);
  if (move.status !== 'cancelled') {
    const undo: MoveStep = { phase: 'undo' };
    const cancelled = await moves.mark(move.id, ['copying'], 'cancelled', JSON.stringify(undo), {
      finishedAt: Date.now(),
    });
    if (!cancelled) {
      const now = await moves.get(move.id);
      if (now?.status !== 'cancelled') throw conflict(`The move is ${now?.status ?? move.status}: too late to cancel.`);
    }
    await wake(context, move);
  }
  const after = (await moves.get(move.id)) ?? move;
  return json(moveOut(after));
}
