import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { canonicalJson } from '../core/json.ts';
import { objectsInView, rowsSeen } from '../domain/access.ts';
import { parseAggregate, type Aggregate, type GroupRow } from '../domain/aggregate.ts';
import { cursorKey, readPosition, signPosition } from '../http/cursor.ts';
import { invalidBody, rejected } from '../http/errors.ts';
import { json } from '../http/respond.ts';
import { memberRead } from './member-read.ts';
import { Aggregates } from '../storage/aggregate.ts';
import { storedCursorKey } from '../storage/cursor-key.ts';

/**
 * POST /workspaces/{workspaceId}/records/aggregate: read-only, members (viewers too). One round trip
 * reads the caller and the definitions in view (the object's fields as the caller may see them
 * type the groups and measures), one more the groups. Order of checks as a query's: 401, 404 for a
 * non-member, then the body (every problem; 422 when each is one of meaning), a foreign cursor 400.
 */
export async function aggregateRecords(request: IRequest, context: Context): Promise<Response> {
  const { workspaceId, caller, objects, building, body } = await memberRead(request, context);
  const objectId = (body as { objectId?: unknown } | null)?.objectId;
  const def = objectsInView(caller, workspaceId, objects).find((d) => d.id === objectId);
  const parsed = parseAggregate(body, def, building);
  if (!parsed.ok)
    throw parsed.problems.every((p) => p.status === 422) ? rejected(parsed.problems) : invalidBody(parsed.problems);
  const aggregate = parsed.value;
  const secret = await cursorKey(context.env.CURSOR_SECRET, () => storedCursorKey(context.env.DB, context.meter));
  const scope = `aggregate/${workspaceId}/${canonicalJson(aggregate.scope)}`;
  const offset =
    aggregate.cursor === undefined
      ? 0
      : Number((await readPosition(secret, aggregate.cursor, scope, '/cursor'))[0] ?? 0);
  const aggregates = new Aggregates(context.reads, context.meter, rowsSeen(caller, workspaceId, new Set()));
  const page = await aggregates.groups(workspaceId, aggregate, offset);
  return json({
    groups: page.groups.map((group) => shown(aggregate, group)),
    exact: page.exact,
    nextCursor: page.more ? await signPosition(secret, [offset + aggregate.limit], scope) : null,
  });
}

/** A group as answered: its key by field name (a boolean as one), its values in the measures' order. */
function shown({ groups, measures }: Aggregate, row: GroupRow): { key: Record<string, unknown>; values: unknown[] } {
  const key = Object.fromEntries(
    groups.map((group, i) => {
      const value = row.key[i] ?? null;
      return [group.name, group.field.type === 'boolean' && value !== null ? value === 1 || value === true : value];
    }),
  );
  const values = measures.map((measure, i) => {
    const value = row.values[i] ?? null;
    // A date-time is kept as epoch milliseconds: its minimum or maximum is answered in UTC.
    if (measure.field?.kind === 'value' && measure.field.type === 'datetime' && typeof value === 'number')
      return new Date(value).toISOString();
    return value;
  });
  return { key, values };
}
