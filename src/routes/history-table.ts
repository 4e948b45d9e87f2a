import { ReferencingPage } from '../schemas/record.ts';
import { referencedBy } from './referenced-by.ts';
import { recordHistory } from './history.ts';
import { HistoryPage } from '../schemas/history.ts';
import { PAGE_QUERY } from './parameters.ts';
import type { Operation } from './operation.ts';

/** What surrounds a record: the live records that reference it, and its history. */
export const historyOperations = {
  listReferencingRecords: {
    method: 'GET',
    path: '/records/:recordId/referenced-by',
    handler: referencedBy,
    operationId: 'listReferencingRecords',
    tag: 'Records',
    summary: 'List the live records that reference a record',
    description:
      'The live records whose reference fields name this record and that the caller can read, by object, field ' +
      'and record id (keyset pages: `nextCursor` until null). The caller must be able to read the record, else 404.',
    auth: 'key',
    ok: { status: 200, schema: ReferencingPage },
    query: PAGE_QUERY,
    errors: [],
  },
  getRecordHistory: {
    method: 'GET',
    path: '/records/:recordId/history',
    handler: recordHistory,
    operationId: 'getRecordHistory',
    tag: 'Records',
    summary: "A record's changes, newest first",
    description:
      'Each kept change: its version, when (`at`), by whom (`by`), its type, and every field it changed with its ' +
      'value before (`from`) and after (`to`), `null` where the field had none (a creation lists the values it ' +
      'was created with). Changes are kept as long as the change feed keeps them (7 days unless configured ' +
      'longer): older ones are gone from here too. Keyset pages by version (`nextCursor` until null). The caller ' +
      'must be able to read the record, else 404.',
    auth: 'key',
    ok: { status: 200, schema: HistoryPage },
    query: PAGE_QUERY,
    errors: [],
  },
} satisfies Record<string, Operation>;
