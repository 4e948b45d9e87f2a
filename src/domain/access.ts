import type { ObjectDef } from './definition.ts';

/** The roles every tenant has. */
export type Role = 'editor' | 'viewer';

/** What a role lets its members do with one object's records. */
export interface ObjectRule {
  objectId: number;
  read: boolean;
  create: boolean;
  update: boolean;
  /** Covers restoring too. */
  delete: boolean;
  /** `own`: only records whose `ownedBy` is the member; others are as missing. */
  rows: 'all' | 'own';
  /** Fields the member may not see (`hidden`) or not change (`read`). */
  fields: Readonly<Record<string, 'hidden' | 'read'>>;
}

/** A role a tenant's administrator defined: an object it does not list is as missing to its members. */
export interface DefinedRole {
  id: number;
  objects: readonly ObjectRule[];
}

/** What a membership gives: a built-in role or a defined one. */
export type Grant = Role | DefinedRole;

/** The authenticated user and what they were granted in each workspace they belong to. */
export interface Caller {
  userId: number;
  roles: ReadonlyMap<number, Grant>;
}

/** What the access layer needs to know of a record to decide on it: never its values. */
export interface RecordPlace {
  objectId: number;
  ownedBy: number | null;
  sharedWorkspaceIds: readonly number[];
}

const EVERYTHING = { read: true, create: true, update: true, delete: true, rows: 'all', fields: {} } as const;
const READING = { read: true, create: false, update: false, delete: false, rows: 'all', fields: {} } as const;

/** What `grant` lets its holder do with `objectId`'s records; undefined: the object is as missing. */
function ruleOf(grant: Grant | undefined, objectId: number): Omit<ObjectRule, 'objectId'> | undefined {
  if (grant === undefined) return undefined;
  if (grant === 'editor') return EVERYTHING;
  if (grant === 'viewer') return READING;
  return grant.objects.find((rule) => rule.objectId === objectId);
}

/** Whether the caller's grant in `workspaceId` lets them see the object at all (it is listed and readable). */
export function seesObject(caller: Caller, workspaceId: number, objectId: number): boolean {
  return ruleOf(caller.roles.get(workspaceId), objectId)?.read === true;
}

/** Creating needs a workspace of the object whose grant lets the caller create its records. */
export function canCreate(caller: Caller, def: ObjectDef): boolean {
  return def.workspaceIds.some((id) => ruleOf(caller.roles.get(id), def.id)?.create === true);
}

/** Fields hidden from the caller and fields they may read but not change, for one object. */
export interface FieldLimits {
  hidden: ReadonlySet<string>;
  readOnly: ReadonlySet<string>;
}

export const NO_LIMITS: FieldLimits = { hidden: new Set(), readOnly: new Set() };

/** The field limits of a record the caller creates: the most open among the object's workspaces that let them. */
export function createLimits(caller: Caller, def: ObjectDef): FieldLimits {
  const creating = def.workspaceIds.filter((id) => ruleOf(caller.roles.get(id), def.id)?.create === true);
  return fieldLimits(caller, def.id, creating);
}

/**
 * What the caller may do with one record: nothing (as missing), read it, change it, delete or
 * restore it; and the fields they may not see or not change in it.
 */
export interface Access {
  read: boolean;
  update: boolean;
  delete: boolean;
  fields: FieldLimits;
}

export const NO_ACCESS: Access = { read: false, update: false, delete: false, fields: NO_LIMITS };

type Rule = Omit<ObjectRule, 'objectId'>;

/** The workspaces whose grants decide on a record: the path's alone (if the record is shared with it), else all. */
function decidingWorkspaces(record: RecordPlace, workspaceId: number | undefined): readonly number[] {
  if (workspaceId === undefined) return record.sharedWorkspaceIds;
  return record.sharedWorkspaceIds.includes(workspaceId) ? [workspaceId] : [];
}

/** The rules that let the caller read `record`, one per deciding workspace whose grant lets them. */
function readingRules(caller: Caller, record: RecordPlace, workspaceId: number | undefined): Rule[] {
  return decidingWorkspaces(record, workspaceId).flatMap((id) => {
    const rule = ruleOf(caller.roles.get(id), record.objectId);
    if (rule === undefined || !rule.read) return [];
    return rule.rows === 'own' && record.ownedBy !== caller.userId ? [] : [rule];
  });
}

/**
 * What the caller may do with a record. Under a workspace path only that workspace counts, and only
 * if the record is shared with it; elsewhere the most open of the caller's grants in its workspaces,
 * field by field. A record they may not read they may do nothing with.
 */
export function recordAccess(caller: Caller, record: RecordPlace, workspaceId?: number): Access {
  const rules = readingRules(caller, record, workspaceId);
  if (rules.length === 0) return NO_ACCESS;
  return {
    read: true,
    update: rules.some((r) => r.update),
    delete: rules.some((r) => r.delete),
    fields: mostOpen(
      rules,
      rules.filter((r) => r.update),
    ),
  };
}

/**
 * The field limits of `objectId` for the caller through `workspaces` (a workspace's path: that one
 * alone): the most open grant that reads the object, field by field.
 */
export function fieldLimits(caller: Caller, objectId: number, workspaces: readonly number[]): FieldLimits {
  return mostOpen(
    workspaces.flatMap((id) => {
      const rule = ruleOf(caller.roles.get(id), objectId);
      return rule?.read === true ? [rule] : [];
    }),
  );
}

/**
 * A field is hidden only if every rule that reads hides it, and read-only only if no rule that
 * changes the record (`changing`, among `reading`) lets it be changed: a rule that reads but may not
 * change opens no field to change.
 */
function mostOpen(reading: readonly Rule[], changing: readonly Rule[] = reading): FieldLimits {
  if (reading.length === 0) return NO_LIMITS;
  const deciding = changing.length > 0 ? changing : reading;
  const hidden = new Set<string>();
  const readOnly = new Set<string>();
  for (const name of new Set(reading.flatMap((rule) => Object.keys(rule.fields)))) {
    if (reading.every((rule) => rule.fields[name] === 'hidden')) hidden.add(name);
    else if (deciding.every((rule) => rule.fields[name] !== undefined)) readOnly.add(name);
  }
  return hidden.size === 0 && readOnly.size === 0 ? NO_LIMITS : { hidden, readOnly };
}

/** A definition as the caller may see it: without its hidden fields. */
export function visibleDef(def: ObjectDef, limits: FieldLimits): ObjectDef {
  if (limits.hidden.size === 0) return def;
  return { ...def, fields: def.fields.filter((field) => !limits.hidden.has(field.name)) };
}

/** Uploading a file into a workspace needs a grant there that creates or changes records. */
export function canUpload(caller: Caller, workspaceId: number): boolean {
  const grant = caller.roles.get(workspaceId);
  if (grant === undefined) return false;
  if (typeof grant === 'string') return grant === 'editor';
  return grant.objects.some((rule) => rule.create || rule.update);
}

/** What decides on a file's download: its uploader, and the record holding it (none: `place` absent). */
export interface FileHolder {
  uploadedBy: number;
  /** The live or deleted record holding the file, and the fields of it that hold the file. */
  record?: { place: RecordPlace; deleted: boolean; fields: readonly string[] };
}

/**
 * A file is downloaded by whoever reads the live record holding it in a field they see, or, while
 * no record holds it, by its uploader alone.
 */
export function canDownload(caller: Caller, file: FileHolder): boolean {
  if (file.record === undefined) return file.uploadedBy === caller.userId;
  if (file.record.deleted) return false;
  const access = recordAccess(caller, file.record.place);
  if (!access.read) return false;
  return file.record.fields.some((field) => !access.fields.hidden.has(field));
}

/** Whether the caller's grants anywhere limit something (an object, rows or fields): the common case is not. */
export function isLimited(caller: Caller): boolean {
  for (const grant of caller.roles.values()) if (typeof grant !== 'string') return true;
  return false;
}

/**
 * The records of a workspace the caller's grant there lets them see, as a condition on a record's
 * object and owner: objects whose records they all see, objects whose records they see when they
 * own them. Undefined: a built-in role, which sees every record shared with the workspace.
 * `excluded`: objects to leave out altogether (a query naming a field hidden in them).
 */
export interface RowsSeen {
  all: number[];
  own: number[];
  userId: number;
}

export function rowsSeen(
  caller: Caller,
  workspaceId: number,
  excluded: ReadonlySet<number> = new Set(),
): RowsSeen | undefined {
  const grant = caller.roles.get(workspaceId);
  if (grant === undefined || typeof grant === 'string') return undefined;
  const seen = grant.objects.filter((rule) => rule.read && !excluded.has(rule.objectId));
  return {
    all: seen.filter((rule) => rule.rows === 'all').map((rule) => rule.objectId),
    own: seen.filter((rule) => rule.rows === 'own').map((rule) => rule.objectId),
    userId: caller.userId,
  };
}

/** A record as someone may see it for whom `hidden` fields are hidden: without their values. */
export function withoutHidden<R extends { fieldValues: readonly { fieldName: string }[] }>(
  record: R,
  hidden: ReadonlySet<string>,
): R {
  if (hidden.size === 0 || !record.fieldValues.some((value) => hidden.has(value.fieldName))) return record;
  return { ...record, fieldValues: record.fieldValues.filter((value) => !hidden.has(value.fieldName)) };
}

/** Every field name some grant of the caller's hides, whatever its object: what an answer is searched for. */
export function hiddenNames(caller: Caller): ReadonlySet<string> {
  const names = new Set<string>();
  for (const grant of caller.roles.values())
    if (typeof grant !== 'string')
      for (const rule of grant.objects)
        for (const [name, limit] of Object.entries(rule.fields)) if (limit === 'hidden') names.add(name);
  return names;
}

/**
 * The field limits of a workspace's records for the caller, object by object, each worked out once:
 * what a page of records or changes through that workspace's path is shown with.
 */
export function limitsIn(caller: Caller, workspaceId: number): (objectId: number) => FieldLimits {
  const known = new Map<number, FieldLimits>();
  return (objectId) => {
    let limits = known.get(objectId);
    if (limits === undefined) {
      limits = fieldLimits(caller, objectId, [workspaceId]);
      known.set(objectId, limits);
    }
    return limits;
  };
}

/** A record as the caller sees it (through `workspaceId`'s path, when given). */
export function shownTo<R extends RecordPlace & { fieldValues: readonly { fieldName: string }[] }>(
  caller: Caller,
  record: R,
  workspaceId?: number,
): R {
  if (!isLimited(caller)) return record;
  const access = recordAccess(caller, record, workspaceId);
  // A record the caller may not read shows no value at all (no path should get here with one).
  return access.read ? withoutHidden(record, access.fields.hidden) : { ...record, fieldValues: [] };
}

/** The objects of a workspace as the caller's grant there shows them: those it reads, without hidden fields. */
export function objectsInView(caller: Caller, workspaceId: number, defs: readonly ObjectDef[]): ObjectDef[] {
  const grant = caller.roles.get(workspaceId);
  if (typeof grant === 'string') return [...defs];
  const seen = defs.flatMap((def) =>
    seesObject(caller, workspaceId, def.id) ? [visibleDef(def, fieldLimits(caller, def.id, [workspaceId]))] : [],
  );
  // A lookup naming a field the caller cannot see (in an object of the workspace) would tell it exists.
  const shown = new Map(seen.map((def) => [def.id, new Set(def.fields.map((f) => f.name))]));
  const known = new Set(defs.map((def) => def.id));
  const hidesTarget = (def: ObjectDef, lookup: ObjectDef['fields'][number]): boolean => {
    const target = def.fields.find((f) => f.name === lookup.reference)?.target;
    return target !== undefined && known.has(target) && shown.get(target)?.has(lookup.field ?? '') !== true;
  };
  return seen.map((def) =>
    def.fields.some((f) => f.type === 'lookup' && hidesTarget(def, f))
      ? { ...def, fields: def.fields.filter((f) => f.type !== 'lookup' || !hidesTarget(def, f)) }
      : def,
  );
}

/** The objects of a workspace in which the caller's grant there hides one of `names`. */
export function objectsHiding(
  caller: Caller,
  workspaceId: number,
  defs: readonly ObjectDef[],
  names: ReadonlySet<string>,
): Set<number> {
  if (typeof caller.roles.get(workspaceId) === 'string' || names.size === 0) return new Set();
  const hides = (def: ObjectDef): boolean =>
    [...fieldLimits(caller, def.id, [workspaceId]).hidden].some((name) => names.has(name));
  return new Set(defs.filter(hides).map((def) => def.id));
}

/**
 * Whether the caller may see that a record references another by `field` (a list of fields,
 * comma-separated, when it does by several): they may read the record and see each field.
 */
export function showsReference(
  caller: Caller,
  row: { objectId: number; field: string; ownedBy?: number | null; sharedWorkspaceIds?: readonly number[] },
): boolean {
  if (!isLimited(caller)) return true;
  const place = {
    objectId: row.objectId,
    ownedBy: row.ownedBy ?? null,
    sharedWorkspaceIds: row.sharedWorkspaceIds ?? [],
  };
  const access = recordAccess(caller, place);
  return access.read && !row.field.split(', ').some((field) => access.fields.hidden.has(field));
}
