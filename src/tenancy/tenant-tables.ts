import { idRange } from '../domain/tenant.ts';

/**
 * Every table that holds a tenant's rows, parents first (D1 keeps foreign keys): what a deleted
 * tenant leaves to remove (children first) and what a move copies (parents first). Each names its
 * key, its columns, and how a row names its tenant: by a column holding ids of the tenant's block,
 * by the tenant's id itself (`tenant`), or, for the ledger, by its write ids (`<time>-t<T>-…`).
 */

export interface TenantTable {
  table: string;
  key: readonly string[];
  columns: readonly string[];
  by: string;
  kind: 'block' | 'tenant' | 'ledger';
  /** No foreign key names it: a copy may remove and insert its rows again in one batch. */
  leaf: boolean;
}

const table = (
  name: string,
  key: string,
  columns: string,
  options: { by?: string; kind?: TenantTable['kind']; parent?: true } = {},
): TenantTable => {
  const keys = key.split(', ');
  return {
    table: name,
    key: keys,
    columns: columns.split(', '),
    by: options.by ?? (keys[0] as string),
    kind: options.kind ?? 'block',
    leaf: options.parent !== true,
  };
};

export const TENANT_TABLES: readonly TenantTable[] = [
  table('objects', 'id', 'id, current_version', { parent: true }),
  table(
    'object_versions',
    'object_id, version',
    'object_id, version, name, name_template, fields, workspace_ids, created_at',
    { parent: true },
  ),
  table('reference_targets', 'target, object_id, field', 'target, object_id, field, on_delete', { by: 'object_id' }),
  table('index_builds', 'object_id, field', 'object_id, field, after_record_id, started_at'),
  table('workspaces', 'id', 'id, name, created_at', { parent: true }),
  table('users', 'id', 'id, name, created_at, admin', { parent: true }),
  table('roles', 'id', 'id, name, objects, created_at, updated_at', { parent: true }),
  table(
    'idempotency_keys',
    'user_id, key, method, path',
    'user_id, method, path, key, fingerprint, token, state, status, headers, body, write_id, shape, created_at, ' +
      'lease_until',
  ),
  table('api_keys', 'id', 'id, key_hash, prefix, user_id, created_at'),
  table('memberships', 'workspace_id, user_id', 'workspace_id, user_id, role, role_id'),
  table(
    'records',
    'id',
    'id, object_id, object_version, name, field_values, creation_type, version, deleted, owned_by, created_at, ' +
      'created_by, updated_at, updated_by, is_template, name_key, terms, folds',
    { parent: true },
  ),
  table(
    'files',
    'id',
    'id, workspace_id, name, size, content_type, sha256, created_by, created_at, object_key, record_id, free_since',
  ),
  table('file_uploads', 'id', 'id, upload_id, workspace_id, name, content_type, created_by, created_at, parts'),
  table('changes', 'seq', 'seq, record_id, version, type, at, by, data, was'),
  table(
    'record_totals',
    'workspace_id, object_id, field, value',
    'workspace_id, object_id, field, value, records, counts, sums',
  ),
  table('record_workspaces', 'record_id, workspace_id', 'record_id, workspace_id'),
  table('name_terms', 'workspace_id, term, record_id', 'workspace_id, term, record_id'),
  table('record_sort', 'workspace_id, key, value, record_id', 'workspace_id, key, value, record_id'),
  table('record_index', 'record_id, field', 'record_id, field, object_id, value, unique_key, live, role, n, total'),
  table(
    'record_referrers',
    'workspace_id, target_id, object_id, field, record_id',
    'workspace_id, target_id, object_id, field, record_id',
  ),
  table('record_refs', 'record_id, field, target_id', 'record_id, field, target_id, object_id, live'),
  table(
    'webhooks',
    'id',
    'id, workspace_id, url, types, object_ids, secret, status, reason, start_seq, created_at, created_by',
  ),
  table(
    'imports',
    'id',
    'id, user_id, workspace_id, object_id, mode, match_on, format, file, size, columns, status, position, ' +
      'processed, created, updated, unchanged, failed, created_at, finished_at, failure, idempotency_key, ' +
      'request_hash, updates_only, total',
    { parent: true },
  ),
  table('import_errors', 'import_id, row', 'import_id, row, errors'),
  table('writes', 'id', 'id, outcome', { kind: 'ledger' }),
  table('sequences', 'name, tenant', 'name, tenant, last', { by: 'tenant', kind: 'tenant' }),
  table('feed_horizons', 'tenant', 'tenant, seq', { kind: 'tenant' }),
];

/**
 * The SQL condition that holds for the tenant's rows of `t`, on `?1` and `?2`, and the two values
 * it binds there for `tenant`: the bounds of its block, its id twice, or the mark its write ids
 * carry (`-t<T>-`) twice.
 */
export function ofTenant(t: TenantTable, tenant: number): { where: string; values: [unknown, unknown] } {
  const { lo, hi } = idRange(tenant);
  const mark = `-t${tenant}-`;
  switch (t.kind) {
    case 'block':
      return { where: `${t.by} >= ?1 AND ${t.by} < ?2`, values: [lo, hi] };
    case 'tenant':
      return { where: `${t.by} BETWEEN ?1 AND ?2`, values: [tenant, tenant] };
    case 'ledger':
      return { where: `substr(${t.by}, 10, length(?1)) = ?2`, values: [mark, mark] };
  }
}
