import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { foldCase } from '../../src/core/fold.ts';
import { MAX_CONDITIONS } from '../../src/domain/query.ts';
import {
  admin,
  bulkRecords,
  call,
  createOne,
  expectProblem,
  newUser,
  newWorkspace,
  queryRecords,
  untilIndexBuilt,
  walkQuery,
  fv,
  objectIn,
} from './helpers.ts';

/**
 * Unique values and contains beyond ASCII: concurrency, definitions, every plan, the largest
 * queries the bounds allow, and letters of every script.
 */

const setup = () =>
  objectIn({
    name: 'Item',
    nameTemplate: '{note}',
    fields: [
      { name: 'note', type: 'text' },
      { name: 'rank', type: 'integer', indexed: true },
    ],
  });

const FIELDS = [
  { name: 'code', type: 'text', unique: true },
  { name: 'note', type: 'text' },
  { name: 'extra', type: 'text' },
];

const uniqueSetup = () => objectIn({ name: 'Item', nameTemplate: '{note}', fields: FIELDS });

async function codes(objectId: number): Promise<{ id: number; code: string }[]> {
  const rows = await env.DB.prepare(
    `SELECT r.id, e.value ->> '$.value' AS code FROM records r, json_each(r.field_values) e
     WHERE r.object_id = ? AND r.deleted = 0 AND e.value ->> '$.fieldName' = 'code' ORDER BY r.id`,
  )
    .bind(objectId)
    .all<{ id: number; code: string }>();
  return rows.results;
}

describe('unique values beyond ASCII under concurrency and definitions', () => {
  it('20 concurrent upserts of one new value in different cases create exactly one record', async () => {
    const { editor, object } = await uniqueSetup();
    const spellings = ['ŁÓDŹ-Ω', 'łódź-ω', 'Łódź-Ω', 'łÓdŹ-ω', 'ŁóDź-Ω'];
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call('POST', `/objects/${object.id}/records/upsert`, {
          key: editor.key,
          body: { matchOn: 'code', items: [{ fieldValues: [fv('code', spellings[i % 5]), fv('note', `n${i}`)] }] },
        }),
      ),
    );
    expect(answers.filter((a) => a.status !== 200 && a.status !== 409)).toEqual([]);
    for (const a of answers.filter((a) => a.status === 409)) expectProblem(a, 409, 'conflict');
    const ok = answers.filter((a) => a.status === 200);
    expect(ok.filter((a) => a.body[0].result === 'created')).toHaveLength(1);
    const held = await codes(object.id);
    expect(held).toHaveLength(1);
    expect(new Set(ok.map((a) => a.body[0].record.id))).toEqual(new Set([held[0]?.id]));
    expect(foldCase(held[0]?.code ?? '')).toBe('łódź-ω');
  });

  it('20 concurrent patches of different records to case variants of one value: exactly one holds it', async () => {
    const { editor, workspaceId, object } = await uniqueSetup();
    const records = [];
    for (let i = 0; i < 20; i++) records.push(await createOne(editor.key, object.id, [fv('code', `c${i}`)]));
    const spellings = ['ΑΘΉΝΑ', 'αθήνα', 'Αθήνα', 'αΘΉνα'];
    const answers = await Promise.all(
      records.map((r, i) =>
        call('PATCH', `/workspaces/${workspaceId}/records/${r.id}`, {
          key: editor.key,
          body: { fieldValues: [fv('code', spellings[i % 4])] },
        }),
      ),
    );
    expect(answers.filter((a) => a.status !== 200 && a.status !== 409).map((a) => a.status)).toEqual([]);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    const held = (await codes(object.id)).filter((r) => foldCase(r.code) === 'αθήνα');
    expect(held).toHaveLength(1);
  });

  it('a restore racing 19 creates of its value in other cases: exactly one live record holds it', async () => {
    const { editor, workspaceId, object } = await uniqueSetup();
    const deleted = await createOne(editor.key, object.id, [fv('code', 'ŒUVRE-Ж')]);
    const gone = await call('DELETE', `/workspaces/${workspaceId}/records/${deleted.id}`, { key: editor.key });
    expect(gone.status).toBeLessThan(300);
    const spellings = ['œuvre-ж', 'Œuvre-Ж', 'œUVRE-ж'];
    const answers = await Promise.all([
      call('POST', `/workspaces/${workspaceId}/records/${deleted.id}/restore`, { key: editor.key, body: {} }),
      ...Array.from({ length: 19 }, (_, i) =>
        call('POST', '/records/batch', {
          key: editor.key,
          body: [{ objectId: object.id, fieldValues: [fv('code', spellings[i % 3])] }],
        }),
      ),
    ]);
    expect(answers.filter((a) => a.status >= 500).map((a) => a.status)).toEqual([]);
    for (const a of answers.filter((a) => a.status === 409)) expectProblem(a, 409, 'conflict');
    expect(answers.filter((a) => a.status < 300)).toHaveLength(1);
    const held = (await codes(object.id)).filter((r) => foldCase(r.code) === 'œuvre-ж');
    expect(held).toHaveLength(1);
  });

  it('upsert: a matchOn value of another type is 422 at its pointer, not a duplicate of its text by case', async () => {
    const { editor, object } = await uniqueSetup();
    const holder = await createOne(editor.key, object.id, [fv('code', 'Ä-12')]);
    const before = await codes(object.id);
    for (const [bad, other] of [
      [['ä-12'], 'Ä-12'],
      [12, '12'],
    ]) {
      const answer = await call('POST', `/objects/${object.id}/records/upsert`, {
        key: editor.key,
        body: { matchOn: 'code', items: [{ fieldValues: [fv('code', bad)] }, { fieldValues: [fv('code', other)] }] },
      });
      expectProblem(answer, 422, 'unprocessable');
      expect(answer.body.errors).toEqual([
        { pointer: '/items/0/fieldValues/0/value', code: 'invalid_type', message: 'expected string' },
      ]);
    }
    expect(await codes(object.id)).toEqual(before);
    expect(before.map((r) => r.id)).toEqual([holder.id]);
  });

  it('made unique: values that differ after U+0000 are distinct; by case beyond ASCII, 409', async () => {
    const { editor, object, definition } = await uniqueSetup();
    const plain = { ...definition, fields: [{ name: 'code', type: 'text' }, FIELDS[1]] };
    expect((await admin('PUT', `/admin/objects/${object.id}`, plain)).status).toBe(200);
    const a = await createOne(editor.key, object.id, [fv('code', 'x\u0000Ä')]);
    const b = await createOne(editor.key, object.id, [fv('code', 'x\u0000B')]);
    expect((await admin('PUT', `/admin/objects/${object.id}`, definition)).status).toBe(200);
    // Now unique: the index holds both, distinct; a case variant of one clashes.
    expectProblem(
      await call('POST', '/records/batch', {
        key: editor.key,
        body: [{ objectId: object.id, fieldValues: [fv('code', 'X\u0000ä')] }],
      }),
      409,
      'conflict',
    );
    expect((await codes(object.id)).map((r) => r.id)).toEqual([a.id, b.id]);
  });
});

describe('a folding contains in every plan over more than 5,000 records, page by page', () => {
  it('each plan walks to exactly the records whose value holds the text in any case', async () => {
    const { editor, workspaceId, object } = await setup();
    const n = 5100;
    await bulkRecords(
      object.id,
      workspaceId,
      n,
      `json_array(json_object('fieldName', 'note', 'value', CASE WHEN i % 500 = 0 THEN 'x ÉMİLE Ǆ ' || i
          WHEN i % 500 = 1 THEN 'x émile ǅ ' || i WHEN i % 500 = 2 THEN 'x emile dz ' || i ELSE 'plain ' || i END),
        json_object('fieldName', 'rank', 'value', i % 3))`,
    );
    const ids = (
      await env.DB.prepare(
        `SELECT r.id, e.value ->> '$.value' AS note, r.id IN (SELECT record_id FROM record_index
           WHERE field = 'rank' AND value = 0) AS zero
         FROM records r, json_each(r.field_values) e
         WHERE r.object_id = ? AND e.value ->> '$.fieldName' = 'note' ORDER BY r.id`,
      )
        .bind(object.id)
        .all<{ id: number; note: string; zero: number }>()
    ).results;
    // `İ` folds to itself (its lower case is two code points), so `ÉMİLE` holds no `émile`.
    const match = (text: string) => ids.filter((r) => foldCase(r.note).includes(foldCase(text)));
    const cases: [Record<string, unknown>, { id: number }[]][] = [
      [{ filter: { field: 'note', op: 'contains', value: 'ÉMILE Ǆ' } }, match('émile ǆ')],
      [{ filter: { field: 'note', op: 'contains', value: 'ǆ' }, search: 'bulk' }, match('ǆ')],
      [
        { filter: { field: 'note', op: 'contains', value: 'Ǆ' }, sort: [{ field: 'id', direction: 'desc' }] },
        match('ǆ').reverse(),
      ],
      [
        {
          filter: {
            and: [
              { field: 'rank', op: 'eq', value: 0 },
              { field: 'note', op: 'contains', value: 'ǅ' },
            ],
          },
        },
        match('ǆ').filter((r) => ids.find((x) => x.id === r.id)?.zero === 1),
      ],
      [
        {
          filter: {
            or: [
              { field: 'note', op: 'contains', value: 'mİl' },
              { field: 'name', op: 'contains', value: 'BULK 5099' },
            ],
          },
          sort: [{ field: 'createdAt', direction: 'asc' }],
        },
        [...match('mİl'), ...ids.slice(-2, -1)],
      ],
    ];
    // Record i (from 1) has rank i % 3.
    const rank = (r: { id: number }) => (ids.findIndex((x) => x.id === r.id) + 1) % 3;
    cases.push([
      {
        filter: { field: 'note', op: 'contains', value: 'ǅ' },
        sort: [
          { field: 'rank', direction: 'desc' },
          { field: 'id', direction: 'asc' },
        ],
      },
      match('ǆ').sort((a, b) => rank(b) - rank(a) || a.id - b.id),
    ]);
    for (const [body, expected] of cases) {
      const walked = await walkQuery(editor.key, workspaceId, { ...body, limit: 3 });
      expect([body, walked.ids]).toEqual([body, expected.map((r) => r.id)]);
    }
    expect(match('ǆ').length).toBe(21);
  });
});

describe('the fold within D1 limits and budgets', () => {
  it('contains on an indexed, a unique field and the name: 600 letters of many scripts, 50 conditions', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const fields = [
      { name: 'tag', type: 'text', indexed: true },
      { name: 'code', type: 'text', unique: true },
    ];
    const definition = { name: 'Item', nameTemplate: '{tag}', workspaceIds: [workspaceId], fields };
    const object = (await admin('POST', '/admin/objects', definition)).body;
    const uppers = 'ÉÖΣΊМОСКВАԵՐᲐᲑᲒᏣᏍᎦＡＢ𐐀ẞǄĀĂĄ'.repeat(20);
    const lowers = foldCase(uppers);
    const hit = await createOne(editor.key, object.id, [fv('tag', `<${uppers}>`), fv('code', `[${uppers}]`)]);
    await createOne(editor.key, object.id, [fv('tag', 'plain'), fv('code', 'plain')]);
    // Three conditions, three of these around them (below), and the rest beside: 50 in all.
    const rest = Array.from({ length: MAX_CONDITIONS - 6 }, (_, i) => ({
      field: ['tag', 'code', 'name'][i % 3],
      op: 'contains',
      value: 'ab',
    }));
    // Nested as deep as allowed: not inside or inside not …
    let filter: unknown = {
      and: [
        { field: 'tag', op: 'contains', value: `<${lowers}>` },
        { field: 'code', op: 'contains', value: `[${lowers}` },
        { field: 'name', op: 'contains', value: `${lowers}>` },
      ],
    };
    for (let i = 0; i < 7; i++) filter = i % 2 === 0 ? { not: filter } : { or: [filter, rest[i] ?? filter] };
    const plain = await queryRecords(editor.key, workspaceId, { filter, count: true });
    expect(plain.status).toBe(200);
    const wide = await queryRecords(editor.key, workspaceId, {
      filter: { or: [filter, { and: rest }] },
      count: true,
      sort: [{ field: 'tag', direction: 'desc' }],
    });
    expect(wide.status).toBe(200);
    // Seven levels of not and or around the three, each or with a condition no record meets: the
    // record holding every letter matches, the other does not.
    expect(plain.body.items.map((r: { id: number }) => r.id)).toEqual([hit.id]);
    expect(wide.body.items.map((r: { id: number }) => r.id)).toEqual([hit.id]);
    expect([plain.body.count.value, wide.body.count.value]).toEqual([1, 1]);
  });

  /** Rows written by 20 creates, a patch beside the unique value and one changing its case. */
  async function costs(code: (i: number) => string, recased: string) {
    const { editor, workspaceId, object } = await uniqueSetup();
    const written = (answer: { headers: Headers }) =>
      Number(/rows;desc="(\d+) written/.exec(answer.headers.get('Server-Timing') ?? '')?.[1]);
    const created = await call('POST', '/records/batch', {
      key: editor.key,
      body: Array.from({ length: 20 }, (_, i) => ({ objectId: object.id, fieldValues: [fv('code', code(i))] })),
    });
    expect(created.status).toBe(201);
    const id = created.body[0].record.id;
    const path = `/workspaces/${workspaceId}/records/${id}`;
    await call('GET', path, { key: editor.key });
    // A field outside the name (`{note}`): the patch leaves the name alone.
    const note = await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('extra', 'b')] } });
    const recase = await call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('code', recased)] } });
    expect([note.status, recase.status]).toEqual([200, 200]);
    expect((await codes(object.id)).find((r) => r.id === id)?.code).toBe(recased);
    return { create20: written(created), note: written(note), recased: written(recase) };
  }

  it('rows written: the fold adds none; a patch beside a unique value beyond ASCII writes at most 6', async () => {
    const beyond = await costs((i) => `ÉMILE-Ω-${i}`, 'émile-ω-0');
    const ascii = await costs((i) => `EMILE-O-${i}`, 'emile-o-0');
    console.log(JSON.stringify({ rowsWritten: { beyond, ascii } }));
    expect(beyond).toEqual(ascii);
    expect(beyond.note).toBeLessThanOrEqual(6);
    expect(beyond.note).toBeGreaterThan(0);
  });

  it('rows written with a unique field: a create at most 23 a record, a patch of its value at most 9', async () => {
    const figures = await costs((i) => `ÉMILE-Ω-${i}`, 'émile-ω-0');
    // 20 a record (a fallback name `Item #<id>`: 8 terms), the unique value's row and key, its object's total.
    expect(figures.create20).toBeLessThanOrEqual(23 * 20);
    // The value's row in the index and its unique key (D1 counts the unique index's entries too).
    expect(figures.recased).toBeLessThanOrEqual(9);
  });
});

describe('definitions over many records with values beyond ASCII', () => {
  it('made indexed: built in chunks; unique over 3,000 values at once; duplicates by case listed', async () => {
    const { editor, workspaceId, object, definition } = await uniqueSetup();
    const plain = { ...definition, fields: [{ name: 'code', type: 'text' }, FIELDS[1]] };
    expect((await admin('PUT', `/admin/objects/${object.id}`, plain)).status).toBe(200);
    await bulkRecords(
      object.id,
      workspaceId,
      3000,
      `json_array(json_object('fieldName', 'code', 'value', 'ÉLAN-Ж-' || i),
        json_object('fieldName', 'note', 'value', CASE WHEN i % 1000 = 7 THEN 'ŒUVRE ' || i ELSE 'x' END))`,
    );
    const all = await codes(object.id);
    const query = async () =>
      (await walkQuery(editor.key, workspaceId, { filter: { field: 'note', op: 'contains', value: 'œuvre' } })).ids;
    const expected = all.filter((_, i) => (i + 1) % 1000 === 7).map((r) => r.id);
    expect(await query()).toEqual(expected);
    // The note indexed: built in chunks after the answer; contains reads the index once it is built.
    const indexed = { ...plain, fields: [plain.fields[0], { name: 'note', type: 'text', indexed: true }] };
    expect((await admin('PUT', `/admin/objects/${object.id}`, indexed)).status).toBe(200);
    expect(await query()).toEqual(expected);
    await untilIndexBuilt(object.id);
    expect(await query()).toEqual(expected);
    // The code made unique over 3,000 distinct values beyond ASCII: built in the definition's write.
    const unique = { ...indexed, fields: [FIELDS[0], indexed.fields[1]] };
    expect((await admin('PUT', `/admin/objects/${object.id}`, unique)).status).toBe(200);
    const keys = await env.DB.prepare(
      `SELECT count(*) AS n, sum(unique_key = lower(replace(replace(value, 'É', 'é'), 'Ж', 'ж'))) AS folded
       FROM record_index WHERE object_id = ? AND field = 'code'`,
    )
      .bind(object.id)
      .first<{ n: number; folded: number }>();
    expect(keys).toEqual({ n: 3000, folded: 3000 });
    const clash = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [fv('code', 'élan-ж-2999')] }],
    });
    expectProblem(clash, 409, 'conflict');
    // Not unique again, two case variants written, unique once more: 409 naming both.
    expect((await admin('PUT', `/admin/objects/${object.id}`, indexed)).status).toBe(200);
    const variant = await createOne(editor.key, object.id, [fv('code', 'élan-ж-1500')]);
    const refused = await admin('PUT', `/admin/objects/${object.id}`, unique);
    expectProblem(refused, 409, 'conflict');
    const holder = all[1499]?.id;
    expect(refused.body.errors).toEqual([
      {
        pointer: '/fields/0/unique',
        code: 'duplicates',
        message: `live records ${holder}, ${variant.id} hold the same value`,
      },
    ]);
  });
});

describe('full case folding: letters of every script', () => {
  it('digraphs, ϴ, ẞ and SS, İ, final sigma and decomposed accents clash by case; other forms stay apart', async () => {
    const { editor, object } = await uniqueSetup();
    const create = (code: string) =>
      call('POST', '/records/batch', {
        key: editor.key,
        body: [{ objectId: object.id, fieldValues: [fv('code', code)] }],
      });
    const held: [string, string[]][] = [
      ['ǅ-1', ['Ǆ-1', 'ǆ-1']],
      ['ϴ-2', ['Θ-2', 'θ-2']],
      ['ẞ-3', ['ß-3', 'SS-3', 'ss-3']],
      ['E\u0301MILE-4', ['e\u0301mile-4', 'E\u0301mIlE-4']],
      ['𝐀-5', []],
      ['İ-6', ['i\u0307-6']],
      ['ΣΟΦΟΣ-7', ['σοφος-7', 'σοφοσ-7']],
    ];
    for (const [value, variants] of held) {
      expect((await create(value)).status).toBe(201);
      for (const variant of variants) expectProblem(await create(variant), 409, 'conflict');
    }
    // Another letter (ı, I), another normal form (é as one code point is not e and a combining
    // accent), a mathematical letter: distinct values.
    for (const distinct of ['I-6', 'ı-6', 'ÉMILE-4', '𝐚-5'])
      expect([distinct, (await create(distinct)).status]).toEqual([distinct, 201]);
    const query = async (value: string) =>
      (
        await queryRecords(editor.key, object.workspaceIds[0], {
          filter: { field: 'code', op: 'contains', value },
        })
      ).body.items.map((r: { fieldValues: { value: string }[] }) => r.fieldValues[0]?.value);
    expect(await query('ǆ-1')).toEqual(['ǅ-1']);
    expect(await query('e\u0301mi')).toEqual(['E\u0301MILE-4']);
    expect(await query('ss-')).toEqual(['ẞ-3']);
  });

  const scripts: [string, string, string][] = [
    ['Georgian capitals (Mtavruli)', 'ᲗᲑᲘᲚᲘᲡᲘ', 'თბილისი'],
    ['polytonic Greek', 'ἈΘΗΝΑ', 'ἀθηνα'],
    ['full-width Latin', 'ＡＢＣ', 'ａｂｃ'],
    ['Cherokee', 'ᏣᎳᎩ', 'ꮳꮃꭹ'],
    ['Deseret (surrogate pairs)', '𐐔𐐯𐑅', '𐐼𐐯𐑅'],
    ['the Kelvin sign', '\u212A-9', 'k-9'],
  ];
  for (const [script, upper, lower] of scripts) {
    it(`${script}: ${upper} and ${lower} are one unique value, and contains finds either`, async () => {
      const { editor, workspaceId, object } = await uniqueSetup();
      const holder = await createOne(editor.key, object.id, [fv('code', upper)]);
      for (const value of [upper, lower]) {
        const found = await queryRecords(editor.key, workspaceId, {
          filter: { field: 'code', op: 'contains', value },
        });
        expect(found.body.items.map((r: { id: number }) => r.id)).toEqual([holder.id]);
      }
      const clash = await call('POST', '/records/batch', {
        key: editor.key,
        body: [{ objectId: object.id, fieldValues: [fv('code', lower)] }],
      });
      expectProblem(clash, 409, 'conflict');
    });
  }
});
