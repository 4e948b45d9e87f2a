import { describe, expect, it } from 'vitest';
import { RESERVED_FIELD_NAMES, reservedNames, type FieldDef } from '../../src/domain/definition.ts';
import { exportColumns } from '../../src/domain/export.ts';
import { SYSTEM_FIELDS } from '../../src/domain/query.ts';
import type { ObjectDefinitionIn } from '../../src/schemas/admin.ts';
import { RecordSchema } from '../../src/schemas/record.ts';

const definition = (fields: FieldDef[]): ObjectDefinitionIn => ({ name: 'Flight', workspaceIds: [1], fields });
const text = (name: string): FieldDef => ({ name, type: 'text' });

describe('field names that shadow a record property', () => {
  it('are refused in any case, each at its name, with 422', () => {
    const fields = [text('title'), text('name'), text('ID'), text('CreatedAt'), text('creationtype'), text('named')];
    expect(reservedNames([], definition(fields))).toEqual(
      [1, 2, 3, 4].map((i) => ({
        pointer: `/fields/${i}/name`,
        code: 'reserved_name',
        message: `${fields[i]?.name} is a property of every record; choose another field name`,
        status: 422,
      })),
    );
  });

  it('are the properties every record has beside its values, sharing and object version', () => {
    const own = ['fieldValues', 'sharedWorkspaceIds', 'objectVersion'];
    expect(new Set(RESERVED_FIELD_NAMES)).toEqual(
      new Set(Object.keys(RecordSchema.entries).filter((k) => !own.includes(k))),
    );
  });

  it('hold every system field a query names and every column an export adds before the fields', () => {
    const exported = exportColumns({ id: 1, version: 1, name: 'Flight', workspaceIds: [1], fields: [] });
    expect([...Object.keys(SYSTEM_FIELDS), ...exported].filter((n) => !RESERVED_FIELD_NAMES.includes(n))).toEqual([]);
  });

  it('keep a field of the current version that already holds one, by its exact name only', () => {
    const current = [text('name'), text('title')];
    expect(reservedNames(current, definition([text('title'), text('name')]))).toEqual([]);
    expect(reservedNames(current, definition([text('Name'), text('version')])).map((p) => p.pointer)).toEqual([
      '/fields/0/name',
      '/fields/1/name',
    ]);
  });
});
