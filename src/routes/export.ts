import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import {
  csvLine,
  exportColumns,
  exportRow,
  inParameter,
  parseExportQuery,
  viewQueryBody,
  type ExportQuery,
  type ExportView,
} from '../domain/export.ts';
import type { ObjectDef } from '../domain/object-def.ts';
import { catalogOf, namedFields, parseQuery, type Query } from '../domain/query.ts';
import { keyHashOf } from '../http/auth.ts';
import { HttpError, invalidQuery, notFound, unauthorized } from '../http/errors.ts';
import { tenantPathIds } from '../http/params.ts';
import { queryOf } from '../http/query.ts';
import type { RecordOut } from '../schemas/record.ts';
import { Queries, type Position } from '../storage/query.ts';
import {
  fieldLimits,
  objectsHiding,
  rowsSeen,
  seesObject,
  visibleDef,
  withoutHidden,
  type Caller,
} from '../domain/access.ts';

/** Records read per D1 call while streaming an export: memory stays flat whatever the workspace's size. */
export const EXPORT_PAGE = 200;
/** Records read per D1 call of an export of a view: a query's page at most. */
const VIEW_PAGE = 100;

/** Reads the export's records a page at a time from `after` (none: the first page); `next` undefined: the last. */
type PageReader = (
  after: number | Position | undefined,
) => Promise<{ records: RecordOut[]; next: number | Position | undefined; member: boolean }>;

/**
 * GET /workspaces/{workspaceId}/records/export?objectId=&format=ndjson|csv: every live record of
 * the object shared with the workspace, in id order, streamed a page at a time (keyset by id: a
 * record changed during the export appears once, as it was when its page was read). With `filter`,
 * `sort` or `search`, the records that query finds, in its order, a query's page at a time.
 * Members only. Its headers go out before any page is read, so its whole cost is logged with its
 * request id once the stream ends.
 */
export async function exportRecords(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { workspaceId } = tenantPathIds(request.params, context.tenant.id, 'workspaceId');
  const sent = queryOf(request.url);
  const { query, problems } = parseExportQuery(sent.params);
  const known = await context.cached.createContext(keyHash, query === undefined ? [] : [query.objectId]);
  if (known.caller === undefined) throw unauthorized();
  if (query === undefined || sent.problems.length > 0) throw invalidQuery([...sent.problems, ...problems]);
  if (!known.caller.roles.has(workspaceId)) throw notFound('Workspace');
  const stored = known.objects.get(query.objectId);
  if (stored === undefined || !stored.workspaceIds.includes(workspaceId)) throw notFound('Object');
  // An object the caller's role does not list is as missing; the fields it hides are no columns.
  if (!seesObject(known.caller, workspaceId, stored.id)) throw notFound('Object');
  const limits = fieldLimits(known.caller, stored.id, [workspaceId]);
  const def = visibleDef(stored, limits);
  const pages =
    query.view === undefined
      ? byId(context, keyHash, workspaceId, def.id)
      : await viewed(context, keyHash, workspaceId, known.caller, def, query.view);
  return new Response(exportStream(context, pages, { def, hidden: limits.hidden }, query), {
    headers: {
      'Content-Type': query.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson',
      'Content-Disposition': `attachment; filename="records-${workspaceId}-${stored.id}.${query.format}"`,
      // Its pages are read as the stream is pulled: no figure sent now could be its cost.
      'Server-Timing': 'export;desc="streamed: its cost is logged with its request id when it ends"',
    },
  });
}

/** Every live record of the object, in id order: the caller's membership read again with each page. */
function byId(context: Context, keyHash: string, workspaceId: number, objectId: number): PageReader {
  const filter = { objectId, deleted: 'exclude' as const, fields: [] };
  return async (after) => {
    const page = await context.lists.records(
      keyHash,
      workspaceId,
      filter,
      (after as number | undefined) ?? 0,
      EXPORT_PAGE,
    );
    const last = page.records.at(-1)?.id;
    const more = page.records.length === EXPORT_PAGE || page.sizeCut;
    return {
      records: page.records,
      next: more ? last : undefined,
      member: page.caller?.roles.has(workspaceId) === true,
    };
  };
}

/**
 * The records the view's query finds, in its order, checked as a query is (400 naming the query
 * parameter, 422 when every problem is one of meaning) before any byte is sent; the caller's
 * membership read again (from this isolate's memory, 30 s at most) with each page.
 */
async function viewed(
  context: Context,
  keyHash: string,
  workspaceId: number,
  caller: Caller,
  def: ObjectDef,
  view: ExportView,
): Promise<PageReader> {
  const { building } = await new Queries(context.reads, context.meter, context.tenant.id).view(keyHash, workspaceId);
  const parsed = parseQuery(viewQueryBody(view, VIEW_PAGE), catalogOf([def], building));
  if (!parsed.ok) {
    const problems = parsed.problems.map(inParameter);
    if (!problems.every((p) => p.status === 422)) throw invalidQuery(problems);
    throw new HttpError(422, { code: 'unprocessable', detail: 'The view cannot be exported.', errors: problems });
  }
  const objectFilter = {
    field: { kind: 'system', name: 'objectId', type: 'integer' },
    op: 'eq',
    value: def.id,
  } as const;
  const own = parsed.value.filter;
  const query: Query = { ...parsed.value, filter: own === undefined ? objectFilter : { and: [objectFilter, own] } };
  const excluded = objectsHiding(caller, workspaceId, [def], namedFields(query));
  const queries = new Queries(context.reads, context.meter, context.tenant.id, rowsSeen(caller, workspaceId, excluded));
  return async (after) => {
    const page = await queries.page(workspaceId, query, after as Position | undefined);
    const member = (await context.cached.createContext(keyHash, [])).caller?.roles.has(workspaceId) === true;
    return { records: page.records, next: page.next, member };
  };
}

/** The export's body: a page of records on each pull, as NDJSON lines or CSV records under a header. */
function exportStream(
  context: Context,
  pages: PageReader,
  { def, hidden }: { def: ObjectDef; hidden: ReadonlySet<string> },
  { format, formulas }: ExportQuery,
): ReadableStream<Uint8Array> {
  const columns = exportColumns(def);
  const visible = (record: RecordOut): RecordOut => withoutHidden(record, hidden);
  const line = (record: RecordOut): string =>
    format === 'csv'
      ? csvLine(exportRow(visible(record), def, columns, formulas))
      : `${JSON.stringify(visible(record))}\n`;
  const encoder = new TextEncoder();
  let after: number | Position | undefined;
  let records = 0;
  const logged = (outcome: string): void =>
    console.log(
      JSON.stringify({
        message: 'export ended',
        requestId: context.requestId,
        outcome,
        records,
        serverTiming: context.meter.header(),
      }),
    );
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (format === 'csv') controller.enqueue(encoder.encode(csvLine(columns)));
    },
    // A pull that enqueues nothing is not called again: pages that found no record (a walk past
    // records of other objects) are read on until one finds some, or the walk ends.
    async pull(controller) {
      for (;;) {
        const page = await pages(after).catch((error: unknown) => {
          logged('failed: a page could not be read');
          throw error;
        });
        if (!page.member) {
          logged('the caller lost access');
          controller.error(new Error('the caller lost access during the export'));
          return;
        }
        records += page.records.length;
        after = page.next;
        if (page.records.length > 0) controller.enqueue(encoder.encode(page.records.map(line).join('')));
        if (page.next === undefined) {
          logged('complete');
          controller.close();
          return;
        }
        if (page.records.length > 0) return;
      }
    },
    cancel() {
      logged('cancelled by the client');
    },
  });
}
