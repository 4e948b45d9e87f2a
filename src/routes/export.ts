import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { csvLine, exportColumns, exportRow, parseExportQuery, type ExportQuery } from '../domain/export.ts';
import type { ObjectDef } from '../domain/object-def.ts';
import { keyHashOf } from '../http/auth.ts';
import { invalidQuery, notFound, unauthorized } from '../http/errors.ts';
import { tenantPathIds } from '../http/params.ts';
import { queryOf } from '../http/query.ts';
import type { RecordOut } from '../schemas/record.ts';
import { fieldLimits, seesObject, visibleDef, withoutHidden } from '../domain/access.ts';

/** Records read per D1 call while streaming an export: memory stays flat whatever the workspace's size. */
export const EXPORT_PAGE = 200;

/**
 * GET /workspaces/{workspaceId}/records/export?objectId=&format=ndjson|csv: every live record of
 * the object shared with the workspace, in id order, streamed a page at a time (keyset by id: a
 * record changed during the export appears once, as it was when its page was read). Members only.
 * Its headers go out before any page is read, so its whole cost is logged with its request id
 * once the stream ends.
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
  return new Response(
    exportStream(context, keyHash, workspaceId, { def: visibleDef(stored, limits), hidden: limits.hidden }, query),
    {
      headers: {
        'Content-Type': query.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson',
        'Content-Disposition': `attachment; filename="records-${workspaceId}-${stored.id}.${query.format}"`,
        // Its pages are read as the stream is pulled: no figure sent now could be its cost.
        'Server-Timing': 'export;desc="streamed: its cost is logged with its request id when it ends"',
      },
    },
  );
}

/** The export's body: a page of records on each pull, as NDJSON lines or CSV records under a header. */
function exportStream(
  context: Context,
  keyHash: string,
  workspaceId: number,
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
  const filter = { objectId: def.id, deleted: 'exclude' as const, fields: [] };
  let after = 0;
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
    async pull(controller) {
      const page = await context.lists.records(keyHash, workspaceId, filter, after, EXPORT_PAGE).catch((error) => {
        logged('failed: a page could not be read');
        throw error;
      });
      if (page.caller?.roles.has(workspaceId) !== true) {
        logged('the caller lost access');
        controller.error(new Error('the caller lost access during the export'));
        return;
      }
      if (page.records.length > 0) controller.enqueue(encoder.encode(page.records.map(line).join('')));
      records += page.records.length;
      after = page.records.at(-1)?.id ?? after;
      if (page.records.length < EXPORT_PAGE && !page.sizeCut) {
        logged('complete');
        controller.close();
      }
    },
    cancel() {
      logged('cancelled by the client');
    },
  });
}
