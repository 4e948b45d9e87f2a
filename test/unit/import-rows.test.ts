import { describe, expect, it } from 'vitest';
import { csvLine, exportColumns, exportRow } from '../../src/domain/export.ts';
import { csvRecords, csvRow, headerProblems, inColumns, ndjsonRow, ROW_DEPTH } from '../../src/domain/import-rows.ts';
import type { ObjectDef } from '../../src/domain/object-def.ts';
import type { RecordOut } from '../../src/schemas/record.ts';

const DEF: ObjectDef = {
  id: 7,
  version: 1,
  name: 'Airport',
  workspaceIds: [1],
  fields: [
    { name: 'code', type: 'text' },
    { name: 'score', type: 'number' },
    { name: 'rank', type: 'integer' },
    { name: 'open', type: 'boolean' },
    { name: 'data', type: 'json' },
    { name: 'tags', type: 'multiSelect', options: ['a', 'b'] },
  ],
};

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const record = (fieldValues: { fieldName: string; value: unknown }[]): RecordOut => ({
  id: 12,
  objectId: 7,
  objectVersion: 1,
  name: '=cmd',
  fieldValues,
  creationType: 'User',
  version: 3,
  deleted: false,
  sharedWorkspaceIds: [1],
  ownedBy: 1,
  createdAt: 1,
  createdBy: 1,
  updatedAt: 99,
  updatedBy: 1,
  isTemplate: false,
});

/** The CSV record `line` (one record) as a row under `columns`. */
const csv = (line: string, columns: string[], mode: 'create' | 'update' = 'create') =>
  csvRow(csvRecords(line, true, 1).records[0] ?? { cells: [] }, columns, DEF, mode);

describe('import rows are checked as the create element they are', () => {
  it('an NDJSON row naming a member twice, a lone surrogate or a number no double holds is a row error', () => {
    const cases: [string, { pointer: string; code: string }[]][] = [
      [
        '{"fieldValues":[{"fieldName":"code","value":"A"}],"fieldValues":[]}',
        [{ pointer: '/fieldValues', code: 'duplicate' }],
      ],
      [
        '{"fieldValues":[{"fieldName":"code","value":"\\ud800"}]}',
        [{ pointer: '/fieldValues/0/value', code: 'invalid_string' }],
      ],
      [
        '{"fieldValues":[{"fieldName":"score","value":1e400}]}',
        [{ pointer: '/fieldValues/0/value', code: 'invalid_number' }],
      ],
      [
        '{"fieldValues":[{"fieldName":"rank","value":9007199254740993}]}',
        [{ pointer: '/fieldValues/0/value', code: 'invalid_number' }],
      ],
      [
        '{"fieldValues":[{"fieldName":"code","value":1},{"fieldName":"code","value":2}]}',
        [{ pointer: '/fieldValues/1/fieldName', code: 'duplicate' }],
      ],
      ['{"fieldValues":[],"id":3}', [{ pointer: '/id', code: 'unknown_property' }]],
    ];
    for (const [line, problems] of cases) {
      const read = ndjsonRow(line, 'create');
      expect(read.ok, line).toBe(false);
      if (!read.ok) expect(read.problems, line).toMatchObject(problems);
    }
  });

  it('a row nests as deep as a batch element may: one level less than a body', () => {
    const deep = (levels: number) =>
      `{"fieldValues":[{"fieldName":"data","value":${'['.repeat(levels)}${']'.repeat(levels)}}]}`;
    // The row, its fieldValues and the entry are three levels; the value takes the rest.
    expect(ndjsonRow(deep(ROW_DEPTH - 3), 'create').ok).toBe(true);
    const read = ndjsonRow(deep(ROW_DEPTH - 2), 'create');
    expect(read.ok ? [] : read.problems.map((p) => p.code)).toEqual(['too_deep']);
  });

  it("an update's NDJSON row is a record as an export writes it: its own properties ignored, a patch's checked", () => {
    const exported = JSON.stringify(record([fv('code', 'LIS')]));
    expect(ndjsonRow(exported, 'update')).toEqual({
      ok: true,
      row: { id: 12, version: 3, ownedBy: 1, fieldValues: [fv('code', 'LIS')] },
    });
    // A line without fieldValues is a plain one: a misspelt key is a field the write then finds unknown.
    expect(ndjsonRow('{"id":12,"feildValues":[]}', 'update')).toEqual({
      ok: true,
      row: { id: 12, fieldValues: [fv('feildValues', [])] },
    });
    const read = ndjsonRow('{"fieldValues":[],"version":"x"}', 'update');
    expect(read.ok ? [] : read.problems.map((p) => [p.pointer, p.code])).toEqual([
      ['/id', 'required'],
      ['/version', 'invalid_type'],
    ]);
  });

  it('a plain line is a row: its keys, as a mapping names them, fields; null no value; an update its id', () => {
    const map = { Title: 'code', 'US Gross': 'gross', Notes: null };
    expect(ndjsonRow('{"Title":"Titanic","US Gross":600788188,"Notes":"x","rank":null}', 'create', map)).toEqual({
      ok: true,
      row: { fieldValues: [fv('code', 'Titanic'), fv('gross', 600788188)] },
    });
    expect(ndjsonRow('{"ID":7,"Title":"Up","rank":null}', 'update', { ...map, ID: 'id' })).toEqual({
      ok: true,
      row: { id: 7, fieldValues: [fv('code', 'Up'), fv('rank', null)] },
    });
    // The row's own form has its field names mapped alike; a name mapped to null is left out.
    const own = '{"fieldValues":[{"fieldName":"Title","value":"Jaws"},{"fieldName":"Notes","value":1}]}';
    expect(ndjsonRow(own, 'create', map)).toEqual({ ok: true, row: { fieldValues: [fv('code', 'Jaws')] } });
  });
});

describe('CSV cells: values by their field, formulas restored, problems in their column', () => {
  it("reads cells by their field's type and takes an export's ' off a formula", () => {
    expect(csv(`'=1+1,-2.5,007,true,"{""a"":1}",a;b`, ['code', 'score', 'rank', 'open', 'data', 'tags'])).toEqual({
      ok: true,
      row: {
        fieldValues: [
          fv('code', '=1+1'),
          fv('score', -2.5),
          fv('rank', '007'),
          fv('open', true),
          fv('data', { a: 1 }),
          fv('tags', ['a', 'b']),
        ],
      },
    });
  });

  it('a number or JSON cell that could not be stored as written is a row error naming its column', () => {
    const read = csv(',9007199254740993,1e400,"{""a"":1,""a"":2}"', ['code', 'rank', 'score', 'data']);
    expect(read.ok ? [] : read.problems).toEqual([
      {
        pointer: '/fieldValues/0/value',
        column: 'rank',
        value: '9007199254740993',
        code: 'invalid_number',
        message: 'integer beyond ±2^53 cannot be held exactly',
      },
      {
        pointer: '/fieldValues/1/value',
        column: 'score',
        value: '1e400',
        code: 'invalid_number',
        message: 'number out of range',
      },
      {
        pointer: '/fieldValues/2/value/a',
        column: 'data',
        value: '{"a":1,"a":2}',
        code: 'duplicate',
        message: 'member name appears more than once in this object',
      },
    ]);
  });

  it("an update reads the record's id and version, ignores its name and update time, and empties as no value", () => {
    const columns = ['id', 'name', 'version', 'updatedAt', 'code', 'score'];
    expect(csv('12,Anything,3,99,,4', columns, 'update')).toEqual({
      ok: true,
      row: { id: 12, version: 3, fieldValues: [fv('score', 4)], blank: ['code'] },
    });
    const bad = csv('x,,,,,', columns, 'update');
    expect(bad.ok ? [] : bad.problems).toEqual([
      { pointer: '/id', column: 'id', code: 'invalid_type', message: "expected the record's id" },
    ]);
  });

  it('names the column of problems the checks find later, from the pointer into the row', () => {
    const problems = inColumns(
      [
        { pointer: '/fieldValues/1/value', code: 'invalid_type', message: 'expected number' },
        { pointer: '/id', code: 'not_found', message: 'no record' },
        { pointer: '/fieldValues', code: 'required', message: 'code is required' },
      ],
      [fv('code', 'x'), fv('score', 'high')],
    );
    expect(problems.map((p) => p.column)).toEqual(['score', 'id', undefined]);
  });
});

describe("CSV headers: an update takes an export's own columns back", () => {
  it('an update needs id and ignores name and updatedAt; a create or upsert drops none of them in silence', () => {
    const exported = ['id', 'name', 'version', 'updatedAt', 'code'];
    expect(headerProblems(exported, DEF, 'update')).toEqual([]);
    expect(headerProblems(exported, DEF, 'create')).toMatchObject([
      { column: 'id', code: 'not_allowed' },
      { column: 'name', code: 'unknown_field' },
      { column: 'version', code: 'unknown_field' },
      { column: 'updatedAt', code: 'unknown_field' },
    ]);
    expect(headerProblems(['name', 'code'], DEF, 'upsert')).toMatchObject([{ column: 'name', code: 'unknown_field' }]);
    expect(headerProblems(['code'], DEF, 'update')).toMatchObject([{ pointer: '/columns', code: 'required' }]);
    expect(headerProblems(['code', 'nope', 'code'], DEF, 'create')).toMatchObject([
      { pointer: '/columns/1', column: 'nope', code: 'unknown_field' },
      { pointer: '/columns/2', column: 'code', code: 'duplicate' },
    ]);
  });
});

describe('CSV exports: columns that never clash, cells an import reads back', () => {
  it("leaves out a record's own column that a field of an older definition holds", () => {
    expect(exportColumns(DEF).slice(0, 5)).toEqual(['id', 'name', 'version', 'updatedAt', 'code']);
    const legacy = { ...DEF, fields: [{ name: 'name', type: 'text' as const }, ...DEF.fields] };
    expect(exportColumns(legacy).slice(0, 4)).toEqual(['id', 'version', 'updatedAt', 'name']);
  });

  it('writes every json value as JSON, neutralises formulas unless kept, and reads back to the same row', () => {
    const values = [fv('code', '+1+1'), fv('score', -3), fv('data', '123'), fv('tags', ['b'])];
    const columns = exportColumns(DEF);
    const cells = exportRow(record(values), DEF, columns, 'escape');
    expect(cells).toEqual(['12', "'=cmd", '3', '99', "'+1+1", '-3', '', '', '"123"', '["b"]']);
    expect(exportRow(record(values), DEF, columns, 'keep')[4]).toBe('+1+1');
    const read = csv(csvLine(cells), columns, 'update');
    expect(read).toEqual({
      ok: true,
      row: { id: 12, version: 3, fieldValues: values, blank: ['rank', 'open'] },
    });
  });
});
