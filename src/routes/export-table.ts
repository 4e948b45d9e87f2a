import { exportRecords } from './export.ts';
import type { Operation } from './operation.ts';

/** A record as an NDJSON export line shows it. */
const EXAMPLE_NDJSON_RECORD =
  '{"id":1,"objectId":1,"objectVersion":1,"name":"Ada Lovelace","fieldValues":[{"fieldName":"firstName",' +
  '"value":"Ada"}],"creationType":"System","version":1,"deleted":false,"sharedWorkspaceIds":[1],"ownedBy":1,' +
  '"createdAt":1795392601008,"createdBy":1,"updatedAt":1795392601008,"updatedBy":1,"isTemplate":false}\n';

/** The export of a workspace's records of an object, as a file. */
export const exportOperations = {
  exportRecords: {
    method: 'GET',
    path: '/workspaces/:workspaceId/records/export',
    handler: exportRecords,
    operationId: 'exportRecords',
    tag: 'Records',
    summary: 'Download every live record of an object shared with a workspace',
    description:
      'Streamed in id order, read a page at a time (the memory it takes does not grow with the workspace): ' +
      '`format=ndjson` (the default) answers one record per line as reads show it; `format=csv` a header ' +
      '`id,name,version,updatedAt` (each left out when a field of an older definition holds its name) and a column ' +
      'per field of the current definition (a string as it is, other values and every `json` value as JSON, no value ' +
      'empty). A cell a spreadsheet would run as a formula (starting `=`, `+`, `-`, `@`, tab or carriage return; not ' +
      "a number) gets a `'` before it, which an import takes off again, unless `formulas=keep`. Either imports back " +
      'with `mode=update&matchOn=id`. A record changed during the download appears once. Members (viewers too). ' +
      "With `filter`, `sort` or `search`, it holds exactly the records that query finds among the object's, in its " +
      'order (a bad one: 400 naming the parameter, with a pointer into its JSON, before anything is sent). ' +
      "The headers go out before any page is read: the export's whole cost (rows read, round trips) is logged with " +
      'its request id when it ends.',
    auth: 'key',
    ok: { status: 200 },
    fileAnswer: {
      'application/x-ndjson': EXAMPLE_NDJSON_RECORD,
      'text/csv':
        "id,name,version,updatedAt,firstName,lastName,motto\r\n1,Ada Lovelace,2,1795392661008,Ada,Lovelace,'=1+1\r\n",
    },
    query: [
      {
        name: 'objectId',
        required: true,
        description: 'The object whose records to export (required).',
        schema: { type: 'integer', minimum: 0 },
      },
      {
        name: 'format',
        description: '`ndjson` (default) or `csv`.',
        schema: { type: 'string', enum: ['ndjson', 'csv'] },
      },
      {
        name: 'formulas',
        description:
          "A CSV export only: `escape` (default) puts a `'` before each cell a spreadsheet would run as a formula; " +
          '`keep` writes every cell as it is.',
        schema: { type: 'string', enum: ['escape', 'keep'] },
      },
      {
        name: 'filter',
        description:
          "A query's `filter`, as JSON: only the records it keeps. Example: " +
          '`{"field":"stage","op":"in","value":["won","lost"]}`.',
        schema: { type: 'string' },
      },
      {
        name: 'sort',
        description:
          'A query\'s `sort`, as JSON: the records in its order. Example: `[{"field":"amount","direction":"desc"}]`.',
        schema: { type: 'string' },
      },
      {
        name: 'search',
        description: "A query's `search`: only the records whose names it finds (by relevance, unless sorted).",
        schema: { type: 'string' },
      },
    ],
    errors: [],
  },
} satisfies Record<string, Operation>;
