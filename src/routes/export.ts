import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { csvLine, exportColumns, exportRow } from '../domain/export.ts';
import { keyHashOf } from '../http/auth.ts';
import { invalidQuery, notFound, unauthorized, type InputProblem } from '../http/errors.ts';
import { pathIds } from '../http/params.ts';
import { queryOf } from '../http/query.ts';

/** Records read per D1 call while streaming an export: memory stays flat whatever the workspace's size. */
export const EXPORT_PAGE = 200;

/**
 * GET /workspaces/{workspaceId}/records/export?objectId=&format=ndjson|csv: every live record of
 * the object shared with the workspace, in id order, streamed a page at a time (keyset by id: a
 * record changed during the export appears once, as it was when its page was read). Members only.
 */
export async function exportRecords(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { workspaceId } = pathIds(request.params, 'workspaceId');
  const sent = queryOf(request.url);
  const problems: InputProblem[] = [...sent.problems];
  const seen = new Set<string>();
  for (const name of sent.params.keys()) {
    if (name !== 'objectId' && name !== 'format')
      problems.push({ query: name, code: 'unknown_parameter', message: 'unknown query parameter' });
    else if (seen.has(name))
      problems.push({ query: name, code: 'duplicate', message: 'parameter given more than once' });
    seen.add(name);
  }
  const rawId = sent.params.get('objectId') ?? '';
  const objectId = /^[0-9]{1,16}$/.test(rawId) ? Number(rawId) : undefined;
  if (objectId === undefined) problems.push({ query: 'objectId', code: 'required', message: 'expected an object id' });
  const format = sent.params.get('format') ?? 'ndjson';
  if (format !== 'ndjson' && format !== 'csv')
    problems.push({ query: 'format', code: 'invalid_value', message: 'expected ndjson or csv' });
  const known = await context.cached.createContext(keyHash, objectId === undefined ? [] : [objectId]);
  if (known.caller === undefined) throw unauthorized();
  if (problems.length > 0) throw invalidQuery(problems);
  if (!known.caller.roles.has(workspaceId)) throw notFound('Workspace');
  const def = known.objects.get(objectId as number);
  if (def === undefined || !def.workspaceIds.includes(workspaceId)) throw notFound('Object');

  const columns = exportColumns(def);
  const encoder = new TextEncoder();
  const filter = { objectId: def.id, deleted: 'exclude' as const, fields: [] };
  let after = 0;
  let first = true;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let text = first && format === 'csv' ? csvLine(columns) : '';
      first = false;
      const page = await context.lists.records(keyHash, workspaceId, filter, after, EXPORT_PAGE);
      if (page.caller?.roles.has(workspaceId) !== true) {
        controller.error(new Error('the caller lost access during the export'));
        return;
      }
      for (const record of page.records)
        text += format === 'csv' ? csvLine(exportRow(record, columns)) : `${JSON.stringify(record)}\n`;
      if (text !== '') controller.enqueue(encoder.encode(text));
      after = page.records.at(-1)?.id ?? after;
      if (page.records.length < EXPORT_PAGE && !page.sizeCut) controller.close();
    },
  });
  return new Response(body, {
    headers: {
      'Content-Type': format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson',
      'Content-Disposition': `attachment; filename="records-${workspaceId}-${def.id}.${format}"`,
    },
  });
}
