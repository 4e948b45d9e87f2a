import { cancelImport, createImport, getImport, importErrors, listImports } from './imports.ts';
import { ImportPage, ImportSchema } from '../schemas/imports.ts';
import { PAGE_QUERY } from './parameters.ts';
import type { Operation } from './operation.ts';

/** Each field type's value in JSON (NDJSON and the API) and in a CSV cell, as imports read and exports write them. */
const FIELD_FORMATS = [
  '| field type | JSON value (NDJSON, API) | CSV cell (empty: no value) |',
  '|---|---|---|',
  '| `text`, `email`, `url`, `select` | a string: ≤ 100,000 characters; `local@domain`; `http(s):` URL; an option ' +
    '| the text as it is |',
  '| `number`, `integer` | a finite number; an integer within ±(2^53 − 1) | `-12.5`, `3e8`; past a double ' +
    '(`1e400`): row error |',
  '| `boolean`, `date`, `datetime` | `true`, `false`; `"2026-02-28"` (a real date); `"2026-11-22T10:00:00+09:00"` ' +
    '(offset or `Z` required) | `true`, `false`; the same text |',
  '| `multiSelect` | an array of distinct options | `a;b`, or a JSON array `["a","b"]` |',
  '| `reference` | a record id; `multiple`: an array of 1–100 distinct ids | `12`; several: `12;13` or `[12,13]` |',
  '| `json` | any JSON value, ≤ 64 levels | its JSON text (a cell that is not JSON is a string) |',
].join('\n');

/** Imports of files of records into a workspace: started, followed, cancelled, and the rows they skipped. */
export const importOperations = {
  createImport: {
    method: 'POST',
    path: '/workspaces/:workspaceId/imports',
    handler: createImport,
    operationId: 'createImport',
    tag: 'Records',
    summary: 'Import a file of records in the background',
    description:
      'Editors of the workspace. The body (up to 100 MB, with its Content-Length) is NDJSON (`application/x-ndjson`: ' +
      'a line is `{ "fieldValues": [...], "isTemplate"? }`, or a plain object of field names and values, `null` no ' +
      'value) or CSV (`text/csv`, RFC 4180: a header row naming ' +
      "fields, cells parsed by their field's type, an empty cell no value, several values as a JSON array or " +
      "separated by `;`, an export's `'` before a formula taken off). It is kept in R2 and applied in chunks, each " +
      "one D1 transaction with the import's position, so every row is applied exactly once through restarts. " +
      'Records are created with `creationType: "System"` by the importer; `mode=upsert&matchOn=<unique field>` ' +
      "patches the record holding each row's value instead; `mode=update&matchOn=id` patches the record each row " +
      'names by `id` (one of the object shared with the workspace, else the row fails; nothing is created) and ' +
      "takes an export as it is: a row's `version`, when given, must be the record's (else the row fails: it " +
      "changed since), the record's other properties (`name`, `updatedAt`, …) are ignored, and in CSV an empty " +
      'cell removes the value. Each row is checked as a create or patch element (I-JSON, depth, types). A row that ' +
      'fails is skipped and listed, each problem with its `column` and the `value` at fault (up to 200 characters); ' +
      'the others are applied; an import whose rows all fail is `failed`. `columns` maps the file as it comes. ' +
      'A file that ' +
      'is not NDJSON or CSV of the object at all: 400 at once. Follow `Location`.\n\n' +
      FIELD_FORMATS,
    auth: 'key',
    fileBody: {
      'application/x-ndjson': '{"fieldValues":[{"fieldName":"firstName","value":"Ada"}]}\n',
      'text/csv': 'firstName,lastName\r\nAda,Lovelace\r\n"Grace ""Amazing""",Hopper\r\n',
    },
    ok: { status: 202, schema: ImportSchema, location: true },
    query: [
      {
        name: 'objectId',
        required: true,
        description: 'The object the rows are records of (required).',
        schema: { type: 'integer', minimum: 0 },
      },
      {
        name: 'mode',
        description: '`create` (default), `upsert` or `update`.',
        schema: { type: 'string', enum: ['create', 'upsert', 'update'] },
      },
      {
        name: 'matchOn',
        description: 'An upsert: the unique field that finds the record to patch. An update: `id` (the default).',
        schema: { type: 'string' },
      },
      {
        name: 'columns',
        description:
          'A JSON object mapping a CSV column or an NDJSON key to a field name (an update also takes `id` and ' +
          '`version`), or to `null` to skip it; unmapped ones keep their names. Example: ' +
          '`{"Name": "name", "US Gross": "usGross", "Notes": null}`.',
        schema: { type: 'string' },
      },
    ],
    idempotencyKey: true,
    errors: [403],
  },
  listImports: {
    method: 'GET',
    path: '/workspaces/:workspaceId/imports',
    handler: listImports,
    operationId: 'listImports',
    tag: 'Records',
    summary: "List the caller's imports into a workspace",
    description:
      "Newest first, a keyset page at a time. An administrator of the tenant sees everyone's imports into the " +
      'workspace. Members only, else 404.',
    auth: 'key',
    ok: { status: 200, schema: ImportPage },
    query: PAGE_QUERY,
    errors: [],
  },
  getImport: {
    method: 'GET',
    path: '/imports/:importId',
    handler: getImport,
    operationId: 'getImport',
    tag: 'Records',
    summary: 'Follow an import: its status and counts',
    description: 'The importer only; anyone else: 404.',
    auth: 'key',
    ok: { status: 200, schema: ImportSchema },
    errors: [],
  },
  cancelImport: {
    method: 'DELETE',
    path: '/imports/:importId',
    handler: cancelImport,
    operationId: 'cancelImport',
    tag: 'Records',
    summary: 'Cancel an import',
    description:
      'No chunk starts after it; the rows applied stay. Cancelling again answers the cancelled import as it stands ' +
      '(so a retry, keyed or not, is safe). An import already finished: 409.',
    auth: 'key',
    ok: { status: 200, schema: ImportSchema },
    idempotencyKey: true,
    errors: [409],
  },
  listImportErrors: {
    method: 'GET',
    path: '/imports/:importId/errors',
    handler: importErrors,
    operationId: 'listImportErrors',
    tag: 'Records',
    summary: 'The rows an import skipped, and why',
    description:
      'NDJSON, streamed in row order: `{ "row": <1-based data row>, "errors": [ { pointer, code, message, ' +
      'column? } ] }`: `pointer` into the row as a JSON element, and for a CSV file the `column` at fault.',
    auth: 'key',
    ok: { status: 200 },
    fileAnswer: {
      'application/x-ndjson':
        '{"row":2,"errors":[{"pointer":"/fieldValues/0/value","code":"invalid_type","message":"expected integer",' +
        '"column":"age"}]}\n',
    },
    errors: [],
  },
} satisfies Record<string, Operation>;
