import type { Env } from '../env.ts';
import { Meter } from '../storage/meter.ts';
import { Moves, type MoveRow } from './moves.ts';
import { databaseNamed, forgetRoute, routeTtlMs } from './routes.ts';
import { onPrimary } from '../storage/sessions.ts';
import { TenantCopy } from './tenant-copy.ts';
import { TenantData } from './tenant-data.ts';
import { TENANT_TABLES } from './tenant-tables.ts';

/**
 * A tenant's move, as steps its object runs one per alarm: copy every table in chunks while the
 * source logs what changes, catch up from that log, switch (the source refuses the tenant's writes,
 * the log is drained, the catalog routes the tenant to the target), wait out the isolates' memory
 * of the old route, then remove the tenant's rows from the source. Where the mover stands is the
 * move's `step` in D1, written after each step: a step run again (a restart, a failure) copies or
 * removes the same rows again, which changes nothing. A move cancelled, or failing before its
 * switch, leaves the tenant where it was and removes the partial copy from the target.
 */

export type MoveStep =
  | { phase: 'begin' }
  | { phase: 'copy'; table: number; after: unknown[] | null }
  | { phase: 'catch-up' }
  | { phase: 'switch' }
  | { phase: 'wait'; until: number; heldMs: number }
  | { phase: 'remove'; heldMs: number }
  | { phase: 'undo' }
  | { phase: 'done'; heldMs?: number };

/**
 * How long an alarm works before it hands over to the next one. The next waits as long again: a
 * database runs one query at a time, and the tenant's own reads and writes take turns with the copy.
 */
const STEP_MS = 500;
/** The log left when the switch may begin: one round of the catch-up. */
const SWITCH_AT = 100;
/** After the switch, the old database keeps the tenant's rows until every isolate read the new route. */
const routesWaitMs = (env: Env): number => routeTtlMs(env) + 5_000;

/** What the object does next: run again after `ms`, or nothing (the move is over). */
export type Next = { ms: number } | undefined;

export async function moveStep(env: Env, id: number, now = Date.now): Promise<Next> {
  const meter = new Meter();
  const moves = new Moves(onPrimary(env.DB, meter), meter);
  const move = await moves.get(id);
  if (move === undefined) return undefined;
  const step = JSON.parse(move.step) as MoveStep;
  const source = databaseNamed(env, move.from);
  const target = databaseNamed(env, move.to);
  if (source === undefined || target === undefined) return undefined;
  // Each step writes to the target under a name of its own: a twin of this object, or this step
  // run again, is refused there once another step has claimed it.
  const runner = crypto.randomUUID();
  const copy = new TenantCopy(onPrimary(source, meter), onPrimary(target, meter), meter, move.tenantId, runner);
  const started = now();
  const busy = (): boolean => now() - started < STEP_MS;
  if ((move.status === 'cancelled' || move.status === 'failed') && step.phase !== 'done')
    return undo(moves, move, copy, target, meter);
  switch (step.phase) {
    case 'begin': {
      // A copy given up earlier may have left rows on the target: they go first.
      if ((await copy.holdsAny('target')) && (await removeSome(target, meter, move.tenantId))) return { ms: 0 };
      await copy.begin();
      return advance(moves, move, { phase: 'copy', table: 0, after: null }, 0);
    }
    case 'copy': {
      await copy.claim();
      let { table, after } = step;
      let rows = 0;
      while (busy() && table < TENANT_TABLES.length) {
        // What changed since is copied first, so a row copied never names a parent the target lacks.
        rows += await drain(copy, busy, table);
        const chunk = await copy.copyChunk(table, after);
        rows += chunk.rows;
        after = chunk.after;
        if (after === null) table++;
      }
      const next: MoveStep = table < TENANT_TABLES.length ? { phase: 'copy', table, after } : { phase: 'catch-up' };
      return advance(moves, move, next, rows, now() - started);
    }
    case 'catch-up': {
      await copy.claim();
      const rows = await drain(copy, busy);
      const left = await copy.pending();
      return advance(moves, move, left <= SWITCH_AT ? { phase: 'switch' } : step, rows, now() - started);
    }
    case 'switch':
      return switchOver(moves, move, copy, now, routesWaitMs(env));
    case 'wait':
      // Its alarm was set for when the isolates' memory of the old route has ended.
      return advance(moves, move, { phase: 'remove', heldMs: step.heldMs }, 0);
    case 'remove':
      while (busy())
        if (!(await removeSome(source, meter, move.tenantId))) {
          const done: MoveStep = { phase: 'done', heldMs: step.heldMs };
          await moves.mark(id, ['switching'], 'succeeded', JSON.stringify(done), { finishedAt: now() });
          return undefined;
        }
      return { ms: 0 };
    case 'undo':
      return undo(moves, move, copy, target, meter);
    case 'done':
      return undefined;
  }
}

/** Catches up from the log while there is time: the rows it wrote. */
async function drain(copy: TenantCopy, busy: () => boolean, copied?: number): Promise<number> {
  let rows = 0;
  for (;;) {
    const round = await copy.catchUp(copied);
    rows += round.rows;
    if (!round.more || !busy()) return rows;
  }
}

/** Saves the next step (unless the move was cancelled meanwhile: then it is undone next). */
async function advance(moves: Moves, move: MoveRow, next: MoveStep, rows: number, rest = 0): Promise<Next> {
  // A move cancelled meanwhile keeps its step: the next one undoes it.
  await moves.advance(move.id, move.status, JSON.stringify(next), rows);
  return { ms: rest };
}

/**
 * The switch, in one alarm so writes are held as briefly as can be: the source refuses the
 * tenant's writes, the log is drained, the target's triggers take its rows as their own, the
 * catalog routes it to the target, and the source marks it moved.
 */
async function switchOver(
  moves: Moves,
  move: MoveRow,
  copy: TenantCopy,
  now: () => number,
  waitMs: number,
): Promise<Next> {
  if (!(await moves.mark(move.id, ['copying', 'switching'], 'switching', JSON.stringify({ phase: 'switch' }))))
    return { ms: 0 };
  const held = now();
  await copy.claim();
  await copy.freeze();
  let rows = 0;
  for (;;) {
    const round = await copy.catchUp();
    rows += round.rows;
    if (!round.more) break;
  }
  await copy.arrive();
  await moves.route(move.tenantId, move.to);
  forgetRoute(move.tenantId);
  await copy.depart();
  const heldMs = now() - held;
  console.log(JSON.stringify({ message: 'tenant switched', tenant: move.tenantId, to: move.to, heldMs, rows }));
  const next: MoveStep = { phase: 'wait', until: now() + waitMs, heldMs };
  await moves.advance(move.id, 'switching', JSON.stringify(next), rows);
  return { ms: waitMs };
}

/** A move given up: the source as before, then the target's partial copy removed a chunk at a time. */
async function undo(moves: Moves, move: MoveRow, copy: TenantCopy, target: D1Database, meter: Meter): Promise<Next> {
  if (move.status === 'succeeded') return undefined;
  await copy.stay();
  await moves.stay(move.tenantId);
  await copy.expectArrival();
  if (await removeSome(target, meter, move.tenantId)) return { ms: 0 };
  await copy.arrive();
  await moves.setStep(move.id, JSON.stringify({ phase: 'done' } satisfies MoveStep));
  return undefined;
}

/** Removes a chunk of the tenant's rows from `db`: false once none is left. */
function removeSome(db: D1Database, meter: Meter, tenant: number): Promise<boolean> {
  return new TenantData(onPrimary(db, meter), meter, tenant).removeSome();
}

/**
 * The move ends as failed (an error its retries did not get past), unless it has switched
 * already: then it goes on, since the tenant lives on the target now.
 */
export async function failMove(db: D1Database, id: number, failure: string, now: number): Promise<boolean> {
  const meter = new Meter();
  const moves = new Moves(onPrimary(db, meter), meter);
  const move = await moves.get(id);
  if (move === undefined || (move.status !== 'copying' && move.status !== 'switching')) return false;
  // A switch that failed before the catalog routed the tenant is given up too; after that, never.
  if (move.status === 'switching' && (await moves.databaseOf(move.tenantId)) !== move.from) return false;
  const undoing: MoveStep = { phase: 'undo' };
  return moves.mark(id, ['copying', 'switching'], 'failed', JSON.stringify(undoing), { finishedAt: now, failure });
}
