import { pointer, type InputProblem } from '../core/problem.ts';
import type { PatchIn, RecordOut } from '../schemas/record.ts';
import { visibleDef, type Access } from './access.ts';
import type { ObjectDef } from './definition.ts';
import { withFormulas } from './formula-values.ts';
import { applyFieldValues, sameValues, sizeProblem } from './field-values.ts';
import { recordName } from './name.ts';

/** What no operation of the service changes about a record: enough to decide a patch before its turn. */
export type RecordFacts = Pick<RecordOut, 'id' | 'objectId' | 'sharedWorkspaceIds' | 'ownedBy' | 'deleted'>;

const at = (prefix: string, status: number, code: string, message: string, ...keys: string[]): InputProblem => ({
  pointer: pointer(prefix, ...keys),
  code,
  message,
  status,
});

/**
 * Everything that can be known about a patch before it takes its turn:
 * 404 for a record the caller cannot see, 403 for one they cannot change (or delete and restore,
 * for `action`), 409 for a deleted one, 422 for a changed `ownedBy` and values that do not fit the
 * current definition as the caller sees it (a hidden field is as one it does not have), 403 at a
 * value of a field they may only read.
 */
export function patchProblems(
  record: RecordFacts | undefined,
  access: Access,
  def: ObjectDef | undefined,
  patch: PatchIn,
  prefix: string,
  action?: 'delete' | 'restore',
): InputProblem[] {
  if (record === undefined || !access.read || def === undefined) {
    return [at(prefix, 404, 'not_found', 'no such record', ...(prefix === '' ? [] : ['id']))];
  }
  if (action === undefined ? !access.update : !access.delete) {
    const what = action === undefined ? 'change' : action;
    return [at(prefix, 403, 'forbidden', `you may not ${what} this record`, ...(prefix === '' ? [] : ['id']))];
  }
  if (record.deleted) return [deletedProblem(prefix)];
  const problems: InputProblem[] = [];
  if (patch.ownedBy !== undefined && patch.ownedBy !== record.ownedBy) {
    problems.push(at(prefix, 422, 'not_editable', 'ownedBy cannot be changed', 'ownedBy'));
  }
  // A patch's problems do not depend on the values the record holds, only on the definition.
  // A field the caller may only read answers 403, whatever the value.
  const values = patch.fieldValues ?? [];
  const readOnly = readOnlyProblems(access.fields.readOnly, values, prefix);
  if (readOnly.length > 0) return readOnly;
  problems.push(...applyFieldValues(visibleDef(def, access.fields), [], values, prefix, 'patch').problems);
  return problems;
}

/** 403 at each value of a field the caller may read but not change. */
export function readOnlyProblems(
  readOnly: ReadonlySet<string>,
  values: readonly { fieldName: string }[],
  prefix: string,
): InputProblem[] {
  if (readOnly.size === 0) return [];
  return values.flatMap((value, i) =>
    readOnly.has(value.fieldName)
      ? [at(prefix, 403, 'read_only_field', 'you may read this field but not change it', 'fieldValues', `${i}`)]
      : [],
  );
}

export function deletedProblem(prefix: string): InputProblem {
  return at(prefix, 409, 'record_deleted', 'a deleted record cannot be patched', ...(prefix === '' ? [] : ['id']));
}

export type Applied = { ok: true; record: RecordOut; changed: boolean } | { ok: false; problem: InputProblem };

/**
 * Applies a patch on top of `record`: merges field values, and when anything changed raises the
 * version by one, stamps the update and re-renders the name. A patch that changes nothing
 * leaves the record as it was (same version, same updatedAt).
 */
export function applyPatch(
  record: RecordOut,
  def: ObjectDef,
  patch: PatchIn,
  userId: number,
  now: number,
  prefix = '',
): Applied {
  if (record.deleted) return { ok: false, problem: deletedProblem(prefix) };
  const merged = applyFieldValues(def, record.fieldValues, patch.fieldValues ?? [], prefix, 'patch');
  const problem = merged.problems[0];
  if (problem !== undefined) return { ok: false, problem };
  // A patch that gives no new value changes nothing (a formula not yet computed for the record is
  // left to its computation); one that does computes every formula, reading the new updatedAt.
  if (sameValues(record.fieldValues, merged.values)) return { ok: true, record, changed: false };
  const updatedAt = Math.max(now, record.updatedAt);
  const values = withFormulas(def, merged.values, { createdAt: record.createdAt, updatedAt });
  const tooLarge = sizeProblem(values, prefix);
  if (tooLarge !== undefined) return { ok: false, problem: tooLarge };
  return {
    ok: true,
    changed: true,
    record: {
      ...record,
      fieldValues: values,
      name: recordName(def, values, record.id),
      version: record.version + 1,
      updatedAt,
      updatedBy: userId,
    },
  };
}

/**
 * `If-Match` with strong comparison (RFC 9110 §13.1.1): `*`, or a list of `"<version>"` tags.
 * A weak tag never matches; an unparsable header matches nothing.
 */
const ENTITY_TAG = /^(W\/)?"[\x21\x23-\x7e\x80-\xff]*"$/;

export function ifMatchAllows(header: string | undefined, version: number): boolean {
  if (header === undefined) return true;
  const tags = header.split(',').map((tag) => tag.trim());
  if (tags.length === 1 && tags[0] === '*') return true;
  if (!tags.every((tag) => ENTITY_TAG.test(tag))) return false;
  return tags.includes(`"${version}"`);
}

/** What a committed write did to a record, as the change feed names it. */
export type ChangeType = 'created' | 'updated' | 'deleted' | 'restored';

/** One write waiting for its turn in a record's object: a patch, or a delete or restore. */
export interface QueuedPatch {
  def: ObjectDef;
  patch: PatchIn;
  userId: number;
  ifMatch?: string;
  action?: 'delete' | 'restore';
}

/** `change` is absent when the write changed nothing. */
export type Outcome =
  { ok: true; record: RecordOut; change?: ChangeType } | { ok: false; status: 409 | 412 | 422; problem?: InputProblem };

/**
 * Deletes or restores (soft): flips `deleted`, raises the version and stamps the update; a
 * record already in that state stays as it is.
 */
export function applyDeletion(record: RecordOut, deleted: boolean, userId: number, now: number): RecordOut {
  if (record.deleted === deleted) return record;
  return {
    ...record,
    deleted,
    version: record.version + 1,
    updatedAt: Math.max(now, record.updatedAt),
    updatedBy: userId,
  };
}

function applyOne(current: RecordOut, item: QueuedPatch, now: number): Outcome {
  if (!ifMatchAllows(item.ifMatch, current.version)) return { ok: false, status: 412 };
  if (item.action !== undefined) {
    const flipped = applyDeletion(current, item.action === 'delete', item.userId, now);
    if (flipped === current) return { ok: true, record: current };
    // It changes updatedAt, which formulas may read.
    const fieldValues = withFormulas(item.def, flipped.fieldValues, flipped);
    const record = sameValues(fieldValues, flipped.fieldValues)
      ? flipped
      : { ...flipped, fieldValues, name: recordName(item.def, fieldValues, flipped.id) };
    return { ok: true, record, change: item.action === 'delete' ? 'deleted' : 'restored' };
  }
  const applied = applyPatch(current, item.def, item.patch, item.userId, now);
  if (!applied.ok) return { ok: false, status: applied.problem.status === 409 ? 409 : 422, problem: applied.problem };
  return applied.changed
    ? { ok: true, record: applied.record, change: 'updated' }
    : { ok: true, record: applied.record };
}

/**
 * Applies queued writes one after another on top of `base` (group commit): each
 * outcome is the record right after that patch, so the versions answered are consecutive,
 * and `final` is the one state to write.
 */
export function applySequence(
  base: RecordOut,
  queued: readonly QueuedPatch[],
  now: number,
): { final: RecordOut; outcomes: Outcome[] } {
  let current = base;
  const outcomes = queued.map((item): Outcome => {
    const outcome = applyOne(current, item, now);
    if (outcome.ok) current = outcome.record;
    return outcome;
  });
  return { final: current, outcomes };
}

/** The newer of two states of one record. */
export function newer(a: RecordOut | undefined, b: RecordOut): RecordOut {
  return a !== undefined && a.version >= b.version ? a : b;
}
