import { adminOperations } from './admin-table.ts';
import { aggregateOperations } from './aggregate-table.ts';
import { exportOperations } from './export-table.ts';
import { fileOperations } from './files-table.ts';
import { historyOperations } from './history-table.ts';
import { importOperations } from './imports-table.ts';
import { listOperations } from './lists-table.ts';
import { liveOperations } from './live-table.ts';
import { metaOperations, openApiOperation } from './meta-table.ts';
import { moveOperations } from './moves-table.ts';
import { queryOperations } from './query-table.ts';
import { recordReadOperations } from './records-read-table.ts';
import { recordWriteOperations } from './record-writes-table.ts';
import { roleOperations } from './roles-table.ts';
import { tenantOperations } from './tenants-table.ts';
import { webhookOperations } from './webhooks-table.ts';
import type { Operation } from './operation.ts';

export type { Handler, Method, Operation, QueryParameter, Tag } from './operation.ts';

/**
 * Every operation of the service, in routing order (a literal segment before a parameter), which is
 * also the order of /openapi.json. Each group declares its operations beside its handlers
 * (`*-table.ts`); this table only places them.
 */
export const operations: Operation[] = [
  metaOperations.getHealth,
  openApiOperation(() => operations),
  recordWriteOperations.createRecords,
  queryOperations.queryRecords,
  aggregateOperations.aggregateRecords,
  recordWriteOperations.upsertRecords,
  recordWriteOperations.patchRecords,
  recordWriteOperations.patchWorkspaceRecords,
  exportOperations.exportRecords,
  importOperations.createImport,
  importOperations.listImports,
  importOperations.getImport,
  importOperations.cancelImport,
  importOperations.listImportErrors,
  fileOperations.uploadFile,
  fileOperations.startUpload,
  fileOperations.uploadPart,
  fileOperations.completeUpload,
  fileOperations.abortUpload,
  fileOperations.downloadFile,
  recordWriteOperations.patchRecord,
  listOperations.listRecords,
  listOperations.listChanges,
  liveOperations.createLiveTicket,
  liveOperations.openLive,
  listOperations.listWorkspaceObjects,
  webhookOperations.createWebhook,
  webhookOperations.listWebhooks,
  webhookOperations.updateWebhook,
  webhookOperations.deleteWebhook,
  webhookOperations.replayWebhook,
  webhookOperations.listDeliveries,
  listOperations.getMe,
  recordWriteOperations.deleteRecord,
  recordWriteOperations.restoreRecord,
  recordReadOperations.getRecord,
  historyOperations.listReferencingRecords,
  historyOperations.getRecordHistory,
  recordReadOperations.getWorkspaceRecord,
  adminOperations.createUser,
  adminOperations.listUsers,
  adminOperations.deleteUser,
  adminOperations.createKey,
  adminOperations.listKeys,
  adminOperations.revokeKey,
  adminOperations.createWorkspace,
  adminOperations.listWorkspaces,
  adminOperations.deleteWorkspace,
  adminOperations.listMembers,
  adminOperations.putMember,
  adminOperations.deleteMember,
  adminOperations.createObject,
  adminOperations.listObjects,
  adminOperations.updateObject,
  adminOperations.getObject,
  adminOperations.getObjectVersion,
  roleOperations.createRole,
  roleOperations.listRoles,
  roleOperations.getRole,
  roleOperations.updateRole,
  roleOperations.deleteRole,
  tenantOperations.createTenant,
  tenantOperations.listTenants,
  tenantOperations.getTenant,
  tenantOperations.deleteTenant,
  moveOperations.moveTenant,
  moveOperations.getMove,
  moveOperations.cancelMove,
  tenantOperations.listDatabases,
];
