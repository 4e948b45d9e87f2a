import type { RecordOut } from '../schemas/record.ts';
import type { ObjectDef } from './definition.ts';
import { ordered } from './field-values.ts';

/**
 * Rollup fields: a record shows, under a rollup's name, what storage keeps of the live records
 * referencing it (`kept`, read with the record): a count or a sum (0 with none), an average, a
 * least or a greatest (no value with none). Never stored in the record's values.
 */
export function withRollups<T extends RecordOut>(
  record: T,
  def: ObjectDef | undefined,
  kept: Readonly<Record<string, unknown>> | undefined,
): T {
  const rollups = def?.fields.filter((field) => field.type === 'rollup') ?? [];
  if (def === undefined || rollups.length === 0) return record;
  const values = new Map(record.fieldValues.map((entry) => [entry.fieldName, entry.value]));
  for (const { name } of rollups) {
    values.delete(name);
    const value = kept?.[name];
    if (value !== undefined && value !== null) values.set(name, value);
  }
  return { ...record, fieldValues: ordered(def, record.fieldValues, values) };
}
