import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { foldCase } from '../../src/core/fold.ts';
import {
  admin,
  call,
  createOne,
  expectProblem,
  newUser,
  newWorkspace,
  runScheduled,
  type Answer,
  fv,
  objectIn,
} from './helpers.ts';

/**
 * Unique text and email values, and `contains`, compare by full Unicode case folding: the Worker
 * computes the fold and stores it with the record; D1 compares what was stored.
 */

const FIELDS = [
  { name: 'code', type: 'text', unique: true },
  { name: 'mail', type: 'email', unique: true },
  { name: 'site', type: 'url', unique: true },
  { name: 'note', type: 'text' },
];

const setup = () => objectIn({ name: 'Item', nameTemplate: '{note}', fields: FIELDS });

async function stored(objectId: number) {
  const rows = await env.DB.prepare(
    'SELECT id, version, deleted, field_values FROM records WHERE object_id = ? ORDER BY id',
  )
    .bind(objectId)
    .all<{ id: number; version: number; deleted: number; field_values: string }>();
  return rows.results;
}

const create = (key: string, objectId: number, fieldValues: unknown[]): Promise<Answer> =>
  call('POST', '/records/batch', { key, body: [{ objectId, fieldValues }] });

/** Each pair: a value held, and one that differs from it only by case beyond ASCII. */
const CLASHES: [string, string][] = [
  ['Émile', 'émile'],
  ['ÖL-1', 'öl-1'],
  ['ΣΟΦΊΑ', 'Σοφία'],
  ['Москва', 'МОСКВА'],
  ['ԵՐԵՎԱՆ', 'երեվան'],
  ['ĐẶNG', 'đặng'],
  // U+0000 is stored as sent, and folded around.
  ['Ä\u0000X', 'ä\u0000x'],
  ['a\u0000B', 'A\u0000b'],
];

describe("the fold stored with the record is the Worker's", () => {
  it('the index keys of text and email values are folded; a url keeps its case', async () => {
    const { editor, object } = await setup();
    const r = await createOne(editor.key, object.id, [
      fv('code', 'ÉMILE Σ'),
      fv('mail', 'ÉLODIE@Exemple.fr'),
      fv('site', 'https://example.com/ÉTÉ'),
    ]);
    const rows = await env.DB.prepare('SELECT field, unique_key FROM record_index WHERE record_id = ? ORDER BY field')
      .bind(r.id)
      .all();
    expect(rows.results).toEqual([
      { field: 'code', unique_key: 'émile σ' },
      { field: 'mail', unique_key: 'élodie@exemple.fr' },
      { field: 'site', unique_key: 'https://example.com/ÉTÉ' },
    ]);
  });
});

describe('unique text and email values clash across case beyond ASCII', () => {
  it('on create: 409 unique_violation at its pointer, nothing written', async () => {
    const { editor, object } = await setup();
    for (const [held, sent] of CLASHES) {
      const holder = await createOne(editor.key, object.id, [fv('note', 'n'), fv('code', held)]);
      const before = await stored(object.id);
      const clash = await call('POST', '/records/batch', {
        key: editor.key,
        body: [
          { objectId: object.id, fieldValues: [fv('code', `${held}-free`)] },
          { objectId: object.id, fieldValues: [fv('note', 'n'), fv('code', sent)] },
        ],
      });
      expectProblem(clash, 409, 'conflict');
      expect(clash.body.errors).toEqual([
        { pointer: '/1/fieldValues/1', code: 'unique_violation', message: `record ${holder.id} holds this value` },
      ]);
      expect(await stored(object.id)).toEqual(before);
    }
    // Two of one request clash with each other.
    const twice = await call('POST', '/records/batch', {
      key: editor.key,
      body: [
        { objectId: object.id, fieldValues: [fv('code', 'Ärger')] },
        { objectId: object.id, fieldValues: [fv('code', 'äRGER')] },
      ],
    });
    expectProblem(twice, 409, 'conflict');
    expect(twice.body.errors[0]).toMatchObject({ pointer: '/1/fieldValues/0', code: 'unique_violation' });
    // Full case folding: ß is ss, a final sigma a sigma, full-width capitals their small forms.
    for (const [held, sent] of [
      ['STRASSE', 'straße'],
      ['οδος', 'ΟΔΟΣ'],
      ['ＡＢＣ', 'ａｂｃ'],
    ]) {
      await createOne(editor.key, object.id, [fv('code', held)]);
      expectProblem(await create(editor.key, object.id, [fv('code', sent)]), 409, 'conflict');
    }
    // Values that differ by more than case stay distinct: an accent, a compatibility form.
    for (const value of ['Emile', 'ABC']) await createOne(editor.key, object.id, [fv('code', value)]);
  });

  it('an email, its local part beyond ASCII, is unique whatever its case', async () => {
    const { editor, object } = await setup();
    const holder = await createOne(editor.key, object.id, [fv('mail', 'élodie.çavaş@exemple.fr')]);
    const before = await stored(object.id);
    const clash = await create(editor.key, object.id, [fv('mail', 'ÉLODIE.ÇAVAŞ@EXEMPLE.FR')]);
    expectProblem(clash, 409, 'conflict');
    expect(clash.body.errors).toEqual([
      { pointer: '/0/fieldValues/0', code: 'unique_violation', message: `record ${holder.id} holds this value` },
    ]);
    expect(await stored(object.id)).toEqual(before);
    // A url is compared as sent.
    await createOne(editor.key, object.id, [fv('site', 'https://example.com/été')]);
    await createOne(editor.key, object.id, [fv('site', 'https://example.com/ÉTÉ')]);
  });

  it('on patch, patch batch and restore: 409 unique_violation, the record unchanged', async () => {
    const { editor, workspaceId, object } = await setup();
    for (const [held, sent] of CLASHES) {
      const holder = await createOne(editor.key, object.id, [fv('code', held)]);
      const other = await createOne(editor.key, object.id, [fv('code', `${held}-other`)]);
      const patch = await call('PATCH', `/workspaces/${workspaceId}/records/${other.id}`, {
        key: editor.key,
        body: { fieldValues: [fv('note', 'changed'), fv('code', sent)] },
      });
      expectProblem(patch, 409, 'conflict');
      // A single patch learns of the clash from D1's refusal: it names the field values, not which.
      expect(patch.body.errors).toEqual([
        {
          pointer: '/fieldValues',
          code: 'unique_violation',
          message: 'another live record holds a value of a unique field',
        },
      ]);
      const batch = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: [{ id: other.id, fieldValues: [fv('code', sent)] }],
      });
      expectProblem(batch, 409, 'conflict');
      expect(batch.body.errors[0]).toMatchObject({ pointer: '/0/fieldValues/0', code: 'unique_violation' });
      const read = await call('GET', `/records/${other.id}`, { key: editor.key });
      expect([read.body.version, read.body.fieldValues]).toEqual([1, [fv('code', `${held}-other`)]]);
      // The holder deleted, the value is free; restoring the holder while another holds it is refused.
      await call('DELETE', `/workspaces/${workspaceId}/records/${holder.id}`, { key: editor.key });
      const taken = await createOne(editor.key, object.id, [fv('code', sent)]);
      const restore = await call('POST', `/workspaces/${workspaceId}/records/${holder.id}/restore`, {
        key: editor.key,
      });
      expectProblem(restore, 409, 'conflict');
      expect(restore.body.errors[0]).toMatchObject({ code: 'unique_violation' });
      const after = await call('GET', `/records/${holder.id}`, { key: editor.key });
      expect([after.body.deleted, after.body.version]).toEqual([true, 2]);
      expect(taken.fieldValues).toEqual([fv('code', sent)]);
    }
  });

  it('upsert matches the holder across case; a create of a held value is 409; nothing else written', async () => {
    const { editor, object } = await setup();
    const holders = [];
    for (const [held] of CLASHES) holders.push(await createOne(editor.key, object.id, [fv('code', held)]));
    const answer = await call('POST', `/objects/${object.id}/records/upsert`, {
      key: editor.key,
      body: { matchOn: 'code', items: CLASHES.map(([, sent]) => ({ fieldValues: [fv('code', sent)] })) },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.map((item: any) => [item.result, item.record.id])).toEqual(
      holders.map((holder) => ['updated', holder.id]),
    );
    for (const [i, [, sent]] of CLASHES.entries()) {
      const read = await call('GET', `/records/${holders[i].id}`, { key: editor.key });
      expect(read.body.fieldValues).toEqual([fv('code', sent)]);
    }
    // The same value twice in one request, by case: 400.
    const twice = await call('POST', `/objects/${object.id}/records/upsert`, {
      key: editor.key,
      body: {
        matchOn: 'code',
        items: [{ fieldValues: [fv('code', 'Ωmega')] }, { fieldValues: [fv('code', 'ωMEGA')] }],
      },
    });
    expectProblem(twice, 400, 'invalid_request');
    expect(twice.body.errors[0]).toMatchObject({ pointer: '/items/1/fieldValues/0/value', code: 'duplicate' });
    // Matched on mail, a create whose code another record holds by case: 409, nothing written.
    const before = await stored(object.id);
    const heldCyrillic = await call('POST', `/objects/${object.id}/records/upsert`, {
      key: editor.key,
      body: { matchOn: 'mail', items: [{ fieldValues: [fv('mail', 'new2@x.org'), fv('code', 'москва')] }] },
    });
    expectProblem(heldCyrillic, 409, 'conflict');
    expect(heldCyrillic.body.errors).toEqual([
      {
        pointer: '/items/0/fieldValues/1',
        code: 'unique_violation',
        message: `record ${holders[3].id} holds this value`,
      },
    ]);
    expect(await stored(object.id)).toEqual(before);
  });

  it('20 concurrent creates of one value in different cases: exactly one record holds it', async () => {
    const { editor, object } = await setup();
    const spellings = ['ÉMILE', 'émile', 'Émile', 'éMILE', 'ÉmIlE'];
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => create(editor.key, object.id, [fv('code', spellings[i % 5])])),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    for (const a of answers.filter((a) => a.status !== 201)) {
      expectProblem(a, 409, 'conflict');
      expect(a.body.errors[0]).toMatchObject({ pointer: '/0/fieldValues/0', code: 'unique_violation' });
    }
    const held = (await stored(object.id)).filter((r) => foldCase(JSON.parse(r.field_values)[0].value) === 'émile');
    expect(held).toHaveLength(1);
  });

  it('marking a field unique while Ä-1 and ä-1 live is 409 listing them; the definition unchanged', async () => {
    const { editor, object, definition } = await setup();
    const a = await createOne(editor.key, object.id, [fv('note', 'Ä-1')]);
    const b = await createOne(editor.key, object.id, [fv('note', 'ä-1')]);
    await createOne(editor.key, object.id, [fv('note', 'A-1')]);
    const unique = { ...definition, fields: FIELDS.map((f) => (f.name === 'note' ? { ...f, unique: true } : f)) };
    const refused = await admin('PUT', `/admin/objects/${object.id}`, unique);
    expectProblem(refused, 409, 'conflict');
    expect(refused.body.errors).toEqual([
      { pointer: '/fields/3/unique', code: 'duplicates', message: `live records ${a.id}, ${b.id} hold the same value` },
    ]);
    expect((await admin('GET', `/admin/objects/${object.id}`)).body.version).toBe(1);
    // Once one of them is deleted, the field can be made unique.
    await call('DELETE', `/workspaces/${definition.workspaceIds[0]}/records/${b.id}`, { key: editor.key });
    expect((await admin('PUT', `/admin/objects/${object.id}`, unique)).status).toBe(200);
    expectProblem(await create(editor.key, object.id, [fv('note', 'Ä-1'.toLowerCase())]), 409, 'conflict');
  });
});

describe('contains is case-insensitive beyond ASCII', () => {
  it('finds ÉMILE by émi and Москва by СКВ, in text fields and names; and nothing else', async () => {
    const { editor, workspaceId, object } = await setup();
    const emile = await createOne(editor.key, object.id, [fv('note', 'ÉMILE ZOLA'), fv('code', 'c1')]);
    const moscow = await createOne(editor.key, object.id, [fv('note', 'Москва'), fv('code', 'c2')]);
    const greek = await createOne(editor.key, object.id, [fv('note', 'Σοφία'), fv('code', 'c3')]);
    await createOne(editor.key, object.id, [fv('note', 'Emile sans accent'), fv('code', 'c4')]);
    const found = async (field: string, value: string) => {
      const answer = await call('POST', `/workspaces/${workspaceId}/records/query`, {
        key: editor.key,
        body: { filter: { field, op: 'contains', value } },
      });
      expect(answer.status).toBe(200);
      return answer.body.items.map((r: any) => r.id);
    };
    for (const field of ['note', 'name']) {
      expect(await found(field, 'émi')).toEqual([emile.id]);
      expect(await found(field, 'ÉMI')).toEqual([emile.id]);
      expect(await found(field, 'СКВ')).toEqual([moscow.id]);
      expect(await found(field, 'ΣΟΦΊ')).toEqual([greek.id]);
      expect(await found(field, 'mile')).toEqual([emile.id, (await stored(object.id))[3]?.id]);
      expect(await found(field, 'ß')).toEqual([]);
    }
    // The code field (unique, so read from the index) too.
    expect(await found('code', 'C2')).toEqual([moscow.id]);
  });
});

describe('contains: any value, any letters', () => {
  it('U+0000, long values, letters of every script, many conditions: the stored fold finds them', async () => {
    const { editor, workspaceId, object } = await setup();
    const scripts = 'ÉÖΣΊМОСКВАԵՐᲐᲑᲒᏣᏍᎦＡＢ𐐀ẞǄ';
    const nul = await createOne(editor.key, object.id, [fv('note', 'before\u0000AFTER Ä *[?]')]);
    const long = await createOne(editor.key, object.id, [fv('note', `${'x'.repeat(5000)}ÉMILE`)]);
    const every = await createOne(editor.key, object.id, [fv('note', `<${scripts}>`)]);
    const found = async (filter: unknown) => {
      const answer = await call('POST', `/workspaces/${workspaceId}/records/query`, {
        key: editor.key,
        body: { filter, count: true },
      });
      expect(answer.status).toBe(200);
      expect(answer.body.count.value).toBe(answer.body.items.length);
      return answer.body.items.map((r: any) => r.id);
    };
    const contains = (value: string, field = 'note') => ({ field, op: 'contains', value });
    expect(await found(contains('\u0000after ä *[?]'))).toEqual([nul.id]);
    expect(await found(contains('e\u0000a'))).toEqual([nul.id]);
    expect(await found(contains(`${'X'.repeat(4000)}émile`))).toEqual([long.id]);
    expect(await found(contains(`<${foldCase(scripts)}>`))).toEqual([every.id]);
    expect(await found(contains(scripts.toLowerCase(), 'name'))).toEqual([every.id]);
    // 50 conditions, each with letters beyond ASCII: no limit on how many letters a query folds.
    const fifty = Array.from({ length: 50 }, (_, i) => contains(i % 2 === 0 ? 'ᲐᲑᲒ' : 'ǆ'));
    expect(await found({ and: fifty })).toEqual([every.id]);
    expect(await found({ or: [contains('ǅ'), contains('émile')] })).toEqual([long.id, every.id]);
  });
});

describe('records written before their folds were kept', () => {
  it('compare by lower() until the scheduled run stores their folds; then contains finds any case', async () => {
    const { editor, workspaceId, object } = await setup();
    const r = await createOne(editor.key, object.id, [fv('note', 'ÉMILE Zola'), fv('code', 'old-1')]);
    await env.DB.prepare('UPDATE records SET folds = NULL WHERE id = ?').bind(r.id).run();
    const found = async (value: string) =>
      (
        await call('POST', `/workspaces/${workspaceId}/records/query`, {
          key: editor.key,
          body: { filter: { field: 'note', op: 'contains', value } },
        })
      ).body.items.map((x: any) => x.id);
    expect(await found('zola')).toEqual([r.id]);
    expect(await found('émile')).toEqual([]);
    await runScheduled();
    expect(await found('émile')).toEqual([r.id]);
    const row = await env.DB.prepare('SELECT folds FROM records WHERE id = ?').bind(r.id).first<{ folds: string }>();
    expect(JSON.parse(row?.folds ?? 'null')).toEqual({ '#': 'émile zola', note: 'émile zola' });
  });
});

describe('folds of a record with long text beyond ASCII', () => {
  it('a short unique value and a short note keep their folds beside 400,000 folded letters', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const fields = [
      { name: 'big1', type: 'text' },
      { name: 'big2', type: 'text' },
      { name: 'code', type: 'text', unique: true },
      { name: 'note', type: 'text' },
    ];
    const object = (await admin('POST', '/admin/objects', { name: 'Long', workspaceIds: [workspaceId], fields })).body;
    const holder = await createOne(editor.key, object.id, [
      fv('big1', 'ΐ'.repeat(100_000)),
      fv('big2', 'ΐ'.repeat(33_333)),
      fv('code', 'Straße'),
      fv('note', 'ÄRZTE'),
    ]);
    const upserted = await call('POST', `/objects/${object.id}/records/upsert`, {
      key: editor.key,
      body: { matchOn: 'code', items: [{ fieldValues: [fv('code', 'STRASSE')] }] },
    });
    expect(upserted.status).toBe(200);
    expect(upserted.body.map((item: any) => [item.result, item.record.id])).toEqual([['updated', holder.id]]);
    const found = await call('POST', `/workspaces/${workspaceId}/records/query`, {
      key: editor.key,
      body: { filter: { field: 'note', op: 'contains', value: 'ärzte' }, fields: ['note'] },
    });
    expect(found.body.items.map((r: { id: number }) => r.id)).toEqual([holder.id]);
  });
});
