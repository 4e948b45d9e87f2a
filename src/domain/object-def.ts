import type { FieldDefinitionIn } from '../schemas/admin.ts';

/**
 * The shape of an object definition as the domain functions need it. Types only, below every
 * domain module, so that definitions, names and field types can share it without importing
 * each other in a circle.
 */

export type FieldType = FieldDefinitionIn['type'];
export type FieldDef = FieldDefinitionIn;

/** One version of an object definition. */
export interface ObjectDef {
  id: number;
  version: number;
  name: string;
  nameTemplate?: string;
  workspaceIds: number[];
  fields: FieldDef[];
}
