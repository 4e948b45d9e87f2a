import * as v from 'valibot';
import { EntityName, FieldName, Id } from './common.ts';
import { maxChars } from './max-chars.ts';

export const FIELD_TYPES = [
  'text',
  'number',
  'integer',
  'boolean',
  'date',
  'datetime',
  'select',
  'multiSelect',
  'email',
  'url',
  'json',
  'reference',
  'file',
  'formula',
  'lookup',
  'rollup',
] as const;

/** What a rollup field computes over the records that reference its record. */
export const ROLLUP_OPS = ['count', 'sum', 'avg', 'min', 'max'] as const;

/** What a formula field's expression yields. */
export const FORMULA_RESULT_TYPES = ['number', 'text', 'boolean', 'date', 'datetime'] as const;

export const NamedInput = v.strictObject({ name: EntityName });
export const Named = v.strictObject({ id: Id, name: EntityName });
/** A user: an administrator of their tenant calls its admin API with their own key. */
export const UserInput = v.strictObject({
  name: EntityName,
  admin: v.exactOptional(
    v.pipe(v.boolean(), v.description("An administrator of the tenant: calls its admin API with the user's own key.")),
  ),
});
export const User = v.strictObject({ id: Id, name: EntityName, admin: UserInput.entries.admin });

/** A key as listed (never the key itself). */
export const ApiKeyInfo = v.strictObject({
  id: v.pipe(Id, v.minValue(1)),
  prefix: v.pipe(
    v.string(),
    v.description('The first characters of the key, to recognise it; `rk_` for keys issued before keys had ids.'),
  ),
  createdAt: Id,
});

/** A key as issued: the only time the key itself is shown. */
export const NewApiKey = v.strictObject({
  id: ApiKeyInfo.entries.id,
  key: v.pipe(v.string(), v.description('The API key; shown only once, only its hash is stored.')),
  prefix: ApiKeyInfo.entries.prefix,
  createdAt: ApiKeyInfo.entries.createdAt,
});

export const Role = v.picklist(['editor', 'viewer']);
const RoleId = v.pipe(Id, v.description('A role the tenant defined (`/admin/roles`), instead of `role`.'));
export const MembershipInput = v.strictObject({
  role: v.exactOptional(v.pipe(Role, v.description('A built-in role; give this or `roleId`.'))),
  roleId: v.exactOptional(RoleId),
});
export const Membership = v.strictObject({
  workspaceId: Id,
  userId: Id,
  role: v.exactOptional(Role),
  roleId: v.exactOptional(RoleId),
});

/** What a defined role lets its members do with one object's records. */
export const ObjectRuleInput = v.strictObject({
  objectId: Id,
  read: v.exactOptional(v.pipe(v.boolean(), v.description('See its records (false: the object is as missing).'))),
  create: v.exactOptional(v.boolean()),
  update: v.exactOptional(v.boolean()),
  delete: v.exactOptional(v.pipe(v.boolean(), v.description('Delete and restore its records.'))),
  rows: v.exactOptional(
    v.pipe(
      v.picklist(['all', 'own']),
      v.description('`own`: only records whose `ownedBy` is the member; others are as missing. Default `all`.'),
    ),
  ),
  fields: v.exactOptional(
    v.pipe(
      v.record(FieldName, v.picklist(['hidden', 'read'])),
      v.description(
        '`hidden`: absent from every answer, and named anywhere it answers as a field the object does not have; ' +
          '`read`: shown, and a write naming it is 403. A field the name template uses cannot be hidden.',
      ),
    ),
  ),
});
export type ObjectRuleIn = v.InferOutput<typeof ObjectRuleInput>;
export const RoleInput = v.strictObject({
  name: EntityName,
  objects: v.pipe(v.array(ObjectRuleInput), v.maxLength(200)),
});
export const ObjectRule = v.strictObject({
  objectId: Id,
  read: v.boolean(),
  create: v.boolean(),
  update: v.boolean(),
  delete: v.boolean(),
  rows: v.picklist(['all', 'own']),
  fields: v.record(FieldName, v.picklist(['hidden', 'read'])),
});
export const DefinedRole = v.strictObject({ id: Id, name: EntityName, objects: v.array(ObjectRule) });

export const FieldDefinition = v.strictObject({
  name: FieldName,
  type: v.picklist(FIELD_TYPES),
  required: v.exactOptional(v.boolean()),
  options: v.exactOptional(v.pipe(v.array(v.pipe(v.string(), v.minLength(1), maxChars(200))), v.maxLength(1000))),
  indexed: v.exactOptional(
    v.pipe(
      v.boolean(),
      v.description('Keep an index of this field (scalar types): queries filter and sort on it by the index.'),
    ),
  ),
  target: v.exactOptional(
    v.pipe(
      Id,
      v.description(
        'A reference field only (required there): the object whose records it references. Fixed for the life of ' +
          'the field.',
      ),
    ),
  ),
  multiple: v.exactOptional(
    v.pipe(
      v.boolean(),
      v.description(
        'A reference field: its value is an array of 1 to 100 distinct record ids, in order. A file field: its ' +
          'value holds 1 to 20 files (else exactly one).',
      ),
    ),
  ),
  onDelete: v.exactOptional(
    v.pipe(
      v.picklist(['restrict', 'keep']),
      v.description(
        'A reference field only: `restrict` (the default) refuses to delete a record that a live record references ' +
          'by this field (409 `record_referenced`); `keep` lets the delete go through and the reference stay.',
      ),
    ),
  ),
  expression: v.exactOptional(
    v.pipe(
      v.string(),
      maxChars(100_000),
      v.description(
        "A formula field only (required there): what it computes from the record's other fields, e.g. " +
          '`IF({Deal amount} > 1000, "large", "small")`. Fields by name (`amount`) or in braces (`{Deal amount}`), ' +
          'and `createdAt`, `updatedAt`; numbers, "texts", TRUE, FALSE, NULL; `+ - * / %`, `&` (joins texts), ' +
          '`= != < <= > >=`, `AND OR NOT`; IF, IFS, COALESCE, ISBLANK, ROUND, FLOOR, CEIL, ABS, MIN, MAX, LEN, ' +
          'LOWER, UPPER, TRIM, LEFT, RIGHT, CONTAINS, DATEADD(d, n, "days"|"weeks"|"months"|"years"|"hours"|' +
          '"minutes"|"seconds"), DATEDIFF(d1, d2, unit), YEAR, MONTH, DAY (UTC). At most 2,000 characters and 32 ' +
          'levels. A blank input, a division by zero or an overflow gives no value. Checked when the definition ' +
          'is written: 422 at the expression, with `position`.',
      ),
    ),
  ),
  reference: v.exactOptional(
    v.pipe(
      FieldName,
      v.description('A lookup field only (required there): a reference field of this object, the records it reads.'),
    ),
  ),
  field: v.exactOptional(
    v.pipe(
      FieldName,
      v.description(
        'A lookup field only (required there): the field of the referenced records it shows, read when the record ' +
          'is: one value, or for a reference of several ids the values of those the reader can read. A record the ' +
          'reader cannot read (or a deleted one, or one without the value) gives no value. Never filtered or sorted.',
      ),
    ),
  ),
  resultType: v.exactOptional(
    v.pipe(
      v.picklist(FORMULA_RESULT_TYPES),
      v.description('A formula field only (required there): the type of what the expression yields.'),
    ),
  ),
  from: v.exactOptional(
    v.pipe(
      v.strictObject({ objectId: Id, field: FieldName }),
      v.description(
        'A rollup field only (required there): the records it summarizes, those of object `objectId` that ' +
          'reference this record by their reference field `field`. Every live one counts, whoever reads.',
      ),
    ),
  ),
  op: v.exactOptional(
    v.pipe(
      v.picklist(ROLLUP_OPS),
      v.description(
        'A rollup field only (required there): `count` the referencing records, or the `sum`, `avg`, `min` or ' +
          '`max` of their number field `of`. Kept exact by every write of those records, without a new version ' +
          'of this one; sorted and filtered by an index. With none: a count or sum is 0, the others have no value.',
      ),
    ),
  ),
  of: v.exactOptional(
    v.pipe(
      FieldName,
      v.description(
        "A rollup field other than a count (required there): a number or integer field of `from`'s object.",
      ),
    ),
  ),
  unique: v.exactOptional(
    v.pipe(
      v.boolean(),
      v.description(
        'No two live records of the object hold the same value; text, email, url, integer and date only. Implies ' +
          'indexed. Text and email compare by full Unicode case folding, every script (Émile = ÉMILE, Σοφία = ' +
          'ΣΟΦΊΑ, straße = STRASSE, ᲗᲑᲘᲚᲘᲡᲘ = თბილისი); accents and other forms stay distinct (Emile is not Émile). ' +
          'A url compares as sent.',
      ),
    ),
  ),
});
export type FieldDefinitionIn = v.InferOutput<typeof FieldDefinition>;

export const ObjectDefinitionInput = v.strictObject({
  name: EntityName,
  workspaceIds: v.pipe(v.array(Id), v.minLength(1), v.maxLength(100)),
  nameTemplate: v.exactOptional(v.pipe(v.string(), maxChars(10000))),
  fields: v.pipe(v.array(FieldDefinition), v.maxLength(200)),
});
export type ObjectDefinitionIn = v.InferOutput<typeof ObjectDefinitionInput>;

export const ObjectDefinition = v.strictObject({
  id: Id,
  version: v.pipe(Id, v.minValue(1)),
  ...ObjectDefinitionInput.entries,
});

/** An object's current definition as `GET /admin/objects/{id}` reads it: with the work its last change left. */
export const ObjectDefinitionRead = v.strictObject({
  ...ObjectDefinition.entries,
  computing: v.exactOptional(
    v.pipe(
      v.strictObject({
        formulas: v.exactOptional(
          v.strictObject({
            afterRecordId: v.pipe(
              v.number(),
              v.integer(),
              v.description("Records up to this id (-1: none yet) hold the current formulas' values."),
            ),
          }),
        ),
        rollups: v.exactOptional(
          v.strictObject({
            afterRecordId: v.pipe(
              v.number(),
              v.integer(),
              v.description("Records up to this id (-1: none yet) hold the current rollups' values."),
            ),
          }),
        ),
      }),
      v.description(
        'Present while a formula or a rollup new or changed in this version is computed for the records written ' +
          "before it: until then such a record holds the field's old value, or none.",
      ),
    ),
  ),
});

/** A keyset page of the admin API's lists: `nextCursor` continues after the last item, null on the last page. */
const pageOf = <S extends v.GenericSchema>(item: S) =>
  v.strictObject({ items: v.array(item), nextCursor: v.nullable(v.string()) });

export const UserPage = pageOf(User);
export const WorkspacePage = pageOf(Named);
export const MembershipPage = pageOf(Membership);
export const RolePage = pageOf(DefinedRole);
export const ObjectDefinitionPage = pageOf(ObjectDefinition);

/** A tenant: an organization whose users, keys, workspaces, objects and records are its own. */
export const TenantInput = v.strictObject({
  name: EntityName,
  database: v.exactOptional(
    v.pipe(
      v.string(),
      v.regex(/^[A-Za-z_][A-Za-z0-9_]{0,99}$/),
      v.description('The database (a D1 binding of the deployment) to put it on; else the one with the most room.'),
    ),
  ),
});
export const TenantStatus = v.picklist(['active', 'moving', 'deleting']);
export const Tenant = v.strictObject({
  id: Id,
  name: EntityName,
  database: v.string(),
  status: TenantStatus,
  createdAt: Id,
  fileBytes: v.exactOptional(
    v.pipe(Id, v.description("GET /tenants/{id}: the bytes of the tenant's files (what FILE_QUOTA_BYTES caps).")),
  ),
});
export const NewTenant = v.strictObject({
  ...Tenant.entries,
  adminKey: v.pipe(v.string(), v.description("The key of the tenant's first user, an administrator: shown this once.")),
});
export const TenantPage = pageOf(Tenant);
export const DatabaseInfo = v.strictObject({
  name: v.pipe(v.string(), v.description('The D1 binding.')),
  tenants: v.pipe(Id, v.description('Tenants on it, the default tenant counted where it is.')),
  bytes: v.pipe(Id, v.description('Its size, as D1 reports it.')),
  fileBytes: v.pipe(Id, v.description('The bytes of the files (in R2) of the tenants on it.')),
});
export const DatabaseList = v.strictObject({ items: v.array(DatabaseInfo) });

/** A tenant's move to another database. */
export const MoveInput = v.strictObject({
  database: v.pipe(
    v.string(),
    v.regex(/^[A-Za-z_][A-Za-z0-9_]{0,99}$/),
    v.description('The database (a D1 binding of the deployment) to move the tenant to.'),
  ),
});
export const Move = v.strictObject({
  id: Id,
  from: v.pipe(v.string(), v.description('The database the tenant leaves.')),
  to: v.pipe(v.string(), v.description('The database it moves to.')),
  status: v.pipe(
    v.picklist(['copying', 'switching', 'succeeded', 'failed', 'cancelled']),
    v.description(
      '`copying` while its rows are copied (it reads and writes as usual); `switching` from the moment its writes ' +
        'are held until its rows have left the old database; then `succeeded`. `failed` and `cancelled` leave it ' +
        'whole where it was.',
    ),
  ),
  rowsCopied: v.pipe(
    Id,
    v.description('Rows written to the new database so far (a row changed meanwhile counts again).'),
  ),
  startedAt: Id,
  finishedAt: v.exactOptional(Id),
  failure: v.exactOptional(v.pipe(v.string(), v.description('Why it failed.'))),
});
