import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { errorLines, expectProblem, finished, fv, objectIn, upload, valuesOf } from './helpers.ts';

/**
 * Files imported as they come: a CSV header or NDJSON keys mapped to fields by `columns` (or kept
 * when they are field names), plain NDJSON objects beside the `fieldValues` form, and row errors
 * that show the value at fault.
 */

const AIRPORT = {
  name: 'Airport',
  nameTemplate: '{airportName}',
  fields: [
    { name: 'code', type: 'text', unique: true },
    { name: 'airportName', type: 'text' },
    { name: 'city', type: 'text' },
    { name: 'elevation', type: 'integer' },
  ],
};

/** The object's records, each as its values by field name, in id order. */
async function stored(objectId: number): Promise<Record<string, unknown>[]> {
  const rows = await env.DB.prepare('SELECT field_values FROM records WHERE object_id = ? AND deleted = 0 ORDER BY id')
    .bind(objectId)
    .all<{ field_values: string }>();
  return rows.results.map((row) => valuesOf({ fieldValues: JSON.parse(row.field_values) }));
}

const mapping = (columns: unknown): string => `columns=${encodeURIComponent(JSON.stringify(columns))}`;

describe('imports of files as they come', () => {
  it('a CSV file with its own header: columns mapped to fields, skipped, or kept by name', async () => {
    const { editor, workspaceId, object } = await objectIn(AIRPORT);
    const csv = 'iata,name,city,latitude,elevation\r\nBOS,Logan,Boston,42.36,19\r\nSFO,San Francisco Intl,,37.6,13\r\n';
    const columns = mapping({ iata: 'code', name: 'airportName', latitude: null });
    const answer = await upload(editor.key, workspaceId, `objectId=${object.id}&${columns}`, csv, 'text/csv');
    expect(answer.status).toBe(202);
    const done = await finished(editor.key, answer.body.id);
    expect(done.rows).toMatchObject({ processed: 2, created: 2, failed: 0 });
    expect(await stored(object.id)).toEqual([
      { code: 'BOS', airportName: 'Logan', city: 'Boston', elevation: 19 },
      { code: 'SFO', airportName: 'San Francisco Intl', elevation: 13 },
    ]);
  });

  it('plain NDJSON objects, mapped or by field name, beside the fieldValues form; null is no value', async () => {
    const { editor, workspaceId, object } = await objectIn(AIRPORT);
    const lines = [
      { IATA: 'JFK', 'Airport Name': 'Kennedy', city: 'New York', elevation: 13, Notes: 'x' },
      { IATA: 'LAX', 'Airport Name': 'Los Angeles', city: null },
      { fieldValues: [fv('IATA', 'ORD'), fv('Airport Name', "O'Hare")] },
    ];
    const columns = mapping({ IATA: 'code', 'Airport Name': 'airportName', Notes: null });
    const body = lines.map((line) => JSON.stringify(line)).join('\n');
    const done = await finished(
      editor.key,
      (await upload(editor.key, workspaceId, `objectId=${object.id}&${columns}`, body)).body.id,
    );
    expect(done.rows).toMatchObject({ processed: 3, created: 3, failed: 0 });
    expect(await stored(object.id)).toEqual([
      { code: 'JFK', airportName: 'Kennedy', city: 'New York', elevation: 13 },
      { code: 'LAX', airportName: 'Los Angeles' },
      { code: 'ORD', airportName: "O'Hare" },
    ]);
    // Without a mapping, keys that are field names are enough.
    const plain = JSON.stringify({ code: 'SEA', airportName: 'Sea-Tac', elevation: 433 });
    const again = await finished(
      editor.key,
      (await upload(editor.key, workspaceId, `objectId=${object.id}`, plain)).body.id,
    );
    expect(again.rows).toMatchObject({ created: 1, failed: 0 });
    expect((await stored(object.id)).at(-1)).toEqual({ code: 'SEA', airportName: 'Sea-Tac', elevation: 433 });
  });

  it('plain lines update by id and upsert by a unique field', async () => {
    const { editor, workspaceId, object } = await objectIn(AIRPORT);
    const first = JSON.stringify({ code: 'BOS', airportName: 'Logan', elevation: 19 });
    await finished(editor.key, (await upload(editor.key, workspaceId, `objectId=${object.id}`, first)).body.id);
    const [id] = (
      await env.DB.prepare('SELECT id FROM records WHERE object_id = ?').bind(object.id).all<{ id: number }>()
    ).results.map((r) => r.id);
    const update = JSON.stringify({ ID: id, airportName: 'General Edward Lawrence Logan', elevation: null });
    const updated = await finished(
      editor.key,
      (await upload(editor.key, workspaceId, `objectId=${object.id}&mode=update&${mapping({ ID: 'id' })}`, update)).body
        .id,
    );
    expect(updated.rows).toMatchObject({ updated: 1, failed: 0 });
    expect(await stored(object.id)).toEqual([{ code: 'BOS', airportName: 'General Edward Lawrence Logan' }]);
    const upsert = [
      { code: 'BOS', city: 'Boston' },
      { code: 'PVD', city: 'Providence' },
    ];
    const upserted = await finished(
      editor.key,
      (
        await upload(
          editor.key,
          workspaceId,
          `objectId=${object.id}&mode=upsert&matchOn=code`,
          upsert.map((line) => JSON.stringify(line)).join('\n'),
        )
      ).body.id,
    );
    expect(upserted.rows).toMatchObject({ created: 1, updated: 1, failed: 0 });
    expect(await stored(object.id)).toEqual([
      { code: 'BOS', airportName: 'General Edward Lawrence Logan', city: 'Boston' },
      { code: 'PVD', city: 'Providence' },
    ]);
  });

  it('a row error shows its column and the value at fault, up to 200 characters', async () => {
    const { editor, workspaceId, object } = await objectIn(AIRPORT);
    const long = 'x'.repeat(500);
    const csv = `code,elevation\r\nA,high\r\nB,${long}\r\nC,7\r\n`;
    const done = await finished(
      editor.key,
      (await upload(editor.key, workspaceId, `objectId=${object.id}`, csv, 'text/csv')).body.id,
    );
    expect(done.rows).toMatchObject({ created: 1, failed: 2 });
    const errors = await errorLines(editor.key, done.id);
    expect(errors.map((e) => e.errors.map((p: any) => [p.column, p.value, p.code]))).toEqual([
      [['elevation', 'high', 'invalid_type']],
      [['elevation', 'x'.repeat(200), 'invalid_type']],
    ]);
    const ndjson = JSON.stringify({ code: 'D', elevation: { feet: 12 } });
    const json = await finished(
      editor.key,
      (await upload(editor.key, workspaceId, `objectId=${object.id}`, ndjson)).body.id,
    );
    expect((await errorLines(editor.key, json.id))[0].errors).toEqual([
      expect.objectContaining({ column: 'elevation', value: '{"feet":12}', code: 'invalid_type' }),
    ]);
  });

  it('a plain line naming a field or the id twice through the mapping fails; problems name their column', async () => {
    const { editor, workspaceId, object } = await objectIn(AIRPORT);
    const first = JSON.stringify({ code: 'BOS', airportName: 'Logan' });
    await finished(editor.key, (await upload(editor.key, workspaceId, `objectId=${object.id}`, first)).body.id);
    const [id] = (
      await env.DB.prepare('SELECT id FROM records WHERE object_id = ?').bind(object.id).all<{ id: number }>()
    ).results.map((r) => r.id);
    const lines = [
      JSON.stringify({ id, recId: 999_999, city: 'X' }),
      JSON.stringify({ code: 'JFK', IATA: 'JFK2' }),
      JSON.stringify({ id: 'five', city: 'Y' }),
    ].join('\n');
    const query = `objectId=${object.id}&mode=update&${mapping({ recId: 'id', IATA: 'code' })}`;
    const done = await finished(editor.key, (await upload(editor.key, workspaceId, query, lines)).body.id);
    expect(done.rows).toMatchObject({ processed: 3, updated: 0, failed: 3 });
    const errors = await errorLines(editor.key, done.id);
    expect(errors.map((e) => e.errors.map((p: any) => [p.pointer, p.column, p.code]))).toEqual([
      [['/recId', 'recId', 'duplicate']],
      [['/IATA', 'IATA', 'duplicate']],
      [['/id', 'id', 'invalid_type']],
    ]);
    expect(await stored(object.id)).toEqual([{ code: 'BOS', airportName: 'Logan' }]);
  });

  it('a mapping that is not one, or names no field, or one field twice: 400 listing each, nothing kept', async () => {
    const { editor, workspaceId, object } = await objectIn(AIRPORT);
    const csv = 'a,b\r\n1,2\r\n';
    const before = await env.DB.prepare('SELECT count(*) AS n FROM imports').first<{ n: number }>();
    const cases: [string, string][] = [
      ['columns=not-json', 'invalid_type'],
      [mapping(['code']), 'invalid_type'],
      [mapping({ a: 7 }), 'invalid_type'],
      [mapping({ a: 'nope' }), 'unknown_field'],
      [mapping({ a: 'code', b: 'code' }), 'duplicate'],
      [mapping({ a: 'id' }), 'unknown_field'],
      [`columns=${encodeURIComponent('{"a":"code","a":"city"}')}`, 'duplicate'],
    ];
    for (const [query, code] of cases) {
      const answer = await upload(editor.key, workspaceId, `objectId=${object.id}&${query}`, csv, 'text/csv');
      expectProblem(answer, 400, 'invalid_request');
      expect([query, answer.body.errors.map((p: any) => [p.query, p.code])]).toEqual([query, [['columns', code]]]);
    }
    // A header column mapped to nothing the object has is named by its own name.
    const header = await upload(
      editor.key,
      workspaceId,
      `objectId=${object.id}&${mapping({ a: 'code' })}`,
      csv,
      'text/csv',
    );
    expectProblem(header, 400, 'invalid_request');
    expect(header.body.errors.map((p: any) => [p.column, p.code])).toEqual([['b', 'unknown_field']]);
    expect(await env.DB.prepare('SELECT count(*) AS n FROM imports').first<{ n: number }>()).toEqual(before);
  });
});
