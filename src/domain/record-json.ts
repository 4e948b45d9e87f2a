import type { RecordOut } from '../schemas/record.ts';
import type { NewRecord } from './create.ts';
import { fallbackName } from './name.ts';

/**
 * The record a create makes, once storage gave it its id, with its properties in the one order
 * every answer uses (the same record serializes identically wherever it appears).
 */
export function createdRecord(r: NewRecord, id: number): RecordOut {
  return {
    id,
    objectId: r.objectId,
    objectVersion: r.objectVersion,
    name: r.name ?? fallbackName(r.objectName, id),
    fieldValues: r.fieldValues,
    creationType: r.creationType,
    version: 1,
    deleted: false,
    sharedWorkspaceIds: r.sharedWorkspaceIds,
    ownedBy: r.userId,
    createdAt: r.now,
    createdBy: r.userId,
    updatedAt: r.now,
    updatedBy: r.userId,
    isTemplate: r.isTemplate,
  };
}

/** JSON.stringify(createdRecord(r, id)) in pieces around the id, for storage to assemble. */
export interface CreatedTemplate {
  /** From after the id up to the name's value. */
  afterId: string;
  /** The name's JSON when it does not depend on the id, else null. */
  nameJson: string | null;
  /** The fallback name's JSON up to the id (its closing quote follows the id). */
  namePrefix: string;
  /** From after the name's value to the end. */
  afterName: string;
}

export function createdRecordTemplate(r: NewRecord): CreatedTemplate {
  const sample = createdRecord(r, 0);
  const afterId = `,"objectId":${r.objectId},"objectVersion":${r.objectVersion},"name":`;
  const nameJson = JSON.stringify(sample.name);
  const head = `{"id":0${afterId}${nameJson}`;
  const text = JSON.stringify(sample);
  // Guards the pieces against a reordering of createdRecord's properties.
  if (!text.startsWith(head)) throw new Error('createdRecord no longer starts with id, objectId, objectVersion, name');
  return {
    afterId,
    nameJson: r.name === undefined ? null : nameJson,
    namePrefix: JSON.stringify(fallbackName(r.objectName, 0)).slice(0, -2),
    afterName: text.slice(head.length),
  };
}

/** A template's JSON for a given id, exactly as storage assembles it. */
export function assemble(t: CreatedTemplate, id: number): string {
  return `{"id":${id}${t.afterId}${t.nameJson ?? `${t.namePrefix}${id}"`}${t.afterName}`;
}
