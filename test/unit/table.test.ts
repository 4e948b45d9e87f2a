import { describe, expect, it } from 'vitest';
import { adminOperations } from '../../src/routes/admin-table.ts';
import { aggregateOperations } from '../../src/routes/aggregate-table.ts';
import { exportOperations } from '../../src/routes/export-table.ts';
import { fileOperations } from '../../src/routes/files-table.ts';
import { historyOperations } from '../../src/routes/history-table.ts';
import { importOperations } from '../../src/routes/imports-table.ts';
import { listOperations } from '../../src/routes/lists-table.ts';
import { liveOperations } from '../../src/routes/live-table.ts';
import { metaOperations } from '../../src/routes/meta-table.ts';
import { moveOperations } from '../../src/routes/moves-table.ts';
import { queryOperations } from '../../src/routes/query-table.ts';
import { recordReadOperations } from '../../src/routes/records-read-table.ts';
import { recordWriteOperations } from '../../src/routes/record-writes-table.ts';
import { roleOperations } from '../../src/routes/roles-table.ts';
import { operations } from '../../src/routes/table.ts';
import { tenantOperations } from '../../src/routes/tenants-table.ts';
import { webhookOperations } from '../../src/routes/webhooks-table.ts';

/** Each group declares its operations beside its handlers; the table places every one of them, once. */
const groups = [
  adminOperations,
  aggregateOperations,
  exportOperations,
  fileOperations,
  historyOperations,
  importOperations,
  listOperations,
  liveOperations,
  metaOperations,
  moveOperations,
  queryOperations,
  recordReadOperations,
  recordWriteOperations,
  roleOperations,
  tenantOperations,
  webhookOperations,
];

describe('the operation table', () => {
  it('names each operation of a group by its operationId', () => {
    for (const group of groups)
      for (const [name, operation] of Object.entries(group)) expect(operation.operationId).toBe(name);
  });

  it('places every operation a group declares exactly once, and no other but /openapi.json', () => {
    const declared = groups.flatMap((group) => Object.values(group));
    const placed = operations.filter((operation) => operation.operationId !== 'getOpenApi');
    expect(new Set(placed).size).toBe(placed.length);
    expect(new Set(placed)).toEqual(new Set(declared));
    expect(new Set(operations.map((operation) => operation.operationId)).size).toBe(operations.length);
  });
});
