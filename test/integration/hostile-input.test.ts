import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { admin, ADMIN_TOKEN, call, countRows, createOne, expectProblem, newObject, world } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const nestedText = (levels: number): string => '['.repeat(levels) + '1' + ']'.repeat(levels);
const row = (id: number) =>
  env.DB.prepare('SELECT version, name, field_values FROM records WHERE id = ?')
    .bind(id)
    .first<{ version: number; name: string; field_values: string }>();

/** A world whose object names records after a json field, so a deep value reaches the name renderer. */
async function jsonWorld() {
  const w = await world();
  const object = await newObject([w.workspaceId], {
    nameTemplate: '{doc}',
    fields: [
      { name: 'doc', type: 'json' },
      { name: 'n', type: 'number' },
    ],
  });
  const record = await createOne(w.editor.key, object.id, [fv('doc', 'start')]);
  return { ...w, object, record };
}

const tooDeep = (answer: { body: any }, pointer: string) =>
  expect(answer.body.errors).toEqual([{ pointer, code: 'too_deep', message: 'nested deeper than 100 levels' }]);

describe('a body nested deeper than 100 levels is 400 before anything reads it', () => {
  it(
    'a json field named in the name template holding 3,800 nested arrays: 400, not a stack overflow, ' +
      'nothing written',
    async () => {
      const { editor, workspaceId, object, record } = await jsonWorld();
      const deep = `{"fieldName":"doc","value":${nestedText(3800)}}`;
      const before = await countRows('records');
      const create = await call('POST', '/records/batch', {
        key: editor.key,
        raw: `[{"objectId":${object.id},"fieldValues":[${deep}]}]`,
      });
      expectProblem(create, 400, 'invalid_request');
      tooDeep(create, '/0/fieldValues/0/value' + '/0'.repeat(96));
      const patch = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
        key: editor.key,
        raw: `{"fieldValues":[${deep}]}`,
      });
      expectProblem(patch, 400, 'invalid_request');
      tooDeep(patch, '/fieldValues/0/value' + '/0'.repeat(97));
      expect(await countRows('records')).toBe(before);
      expect((await row(record.id))?.version).toBe(1);
    },
  );

  it('on every path that takes a body, with or without an Idempotency-Key, in a field of any type', async () => {
    const { editor, workspaceId, object, record } = await jsonWorld();
    const deep = nestedText(2_500);
    const withKey = { 'Idempotency-Key': 'deep-1' };
    const cases: [string, string, string, Record<string, string>?][] = [
      ['POST', '/records/batch', `[{"objectId":${object.id},"fieldValues":[{"fieldName":"n","value":${deep}}]}]`],
      ['POST', '/records/batch', `[{"objectId":${object.id},"fieldValues":[],"extra":${deep}}]`, withKey],
      ['PATCH', '/records/batch', `[{"id":${record.id},"fieldValues":[{"fieldName":"doc","value":${deep}}]}]`],
      [
        'PATCH',
        `/workspaces/${workspaceId}/records/batch`,
        `[{"id":${record.id},"fieldValues":[{"fieldName":"doc","value":${deep}}]}]`,
        withKey,
      ],
      ['PATCH', `/workspaces/${workspaceId}/records/${record.id}`, `{"ownedBy":${deep}}`, withKey],
      ['DELETE', `/workspaces/${workspaceId}/records/${record.id}`, `{"x":${deep}}`],
      ['POST', `/workspaces/${workspaceId}/records/${record.id}/restore`, deep, withKey],
      ['POST', '/admin/users', `{"name":${deep}}`],
      ['POST', '/admin/objects', `{"name":"x","workspaceIds":[${workspaceId}],"fields":[${deep}]}`],
    ];
    for (const [method, path, raw, headers] of cases) {
      const key = path.startsWith('/admin') ? ADMIN_TOKEN : editor.key;
      const res = await call(method, path, { key, raw, ...(headers === undefined ? {} : { headers }) });
      expectProblem(res, 400, 'invalid_request');
      expect(res.body.errors[0].code, `${method} ${path}`).toBe('too_deep');
    }
    // Exactly 100 levels is fine: the bound is the body's, the json value's own bound (64) answers 422.
    const hundred = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      raw: `{"fieldValues":[{"fieldName":"doc","value":${nestedText(97)}}]}`,
    });
    expectProblem(hundred, 422, 'unprocessable');
    expect((await row(record.id))?.version).toBe(1);
    expect(await countRows('idempotency_keys')).toBe(0);
  });

  it('a deep body still answers 401 first to a caller without a key', async () => {
    const res = await call('POST', '/records/batch', { raw: nestedText(5_000) });
    expectProblem(res, 401, 'unauthorized');
  });
});

describe('I-JSON: a repeated member name or a number a double cannot hold as written is 400', () => {
  it('the same member name twice is refused, never "last one wins"', async () => {
    const { editor, object } = await jsonWorld();
    const before = await countRows('records');
    const res = await call('POST', '/records/batch', {
      key: editor.key,
      raw: `[{"objectId":999999,"objectId":${object.id},"fieldValues":[]}]`,
    });
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors).toEqual([
      { pointer: '/0/objectId', code: 'duplicate', message: 'member name appears more than once in this object' },
    ]);
    const user = await call('POST', '/admin/users', { key: ADMIN_TOKEN, raw: '{"name":"a","n\\u0061me":"b"}' });
    expectProblem(user, 400, 'invalid_request');
    expect(user.body.errors[0]).toMatchObject({ pointer: '/name', code: 'duplicate' });
    expect(await countRows('records')).toBe(before);
  });

  it('huge, underflowing and inexact integers are refused wherever they appear, json values included', async () => {
    const { editor, workspaceId, record } = await jsonWorld();
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    const cases: [string, string, string][] = [
      [
        '{"fieldValues":[{"fieldName":"doc","value":{"a":[9007199254740993]}}]}',
        '/fieldValues/0/value/a/0',
        'integer beyond ±2^53 cannot be held exactly',
      ],
      [
        '{"fieldValues":[{"fieldName":"doc","value":18446744073709551617}]}',
        '/fieldValues/0/value',
        'integer beyond ±2^53 cannot be held exactly',
      ],
      ['{"fieldValues":[{"fieldName":"n","value":1e-400}]}', '/fieldValues/0/value', 'number underflows to 0'],
      ['{"fieldValues":[{"fieldName":"n","value":-1.8e308}]}', '/fieldValues/0/value', 'number out of range'],
      ['{"ownedBy":12345678901234567890}', '/ownedBy', 'integer beyond ±2^53 cannot be held exactly'],
    ];
    for (const [raw, pointer, message] of cases) {
      const res = await call('PATCH', path, { key: editor.key, raw });
      expectProblem(res, 400, 'invalid_request');
      expect(res.body.errors, raw).toEqual([{ pointer, code: 'invalid_number', message }]);
    }
    expect((await row(record.id))?.version).toBe(1);
    // What a double holds exactly is taken: 2^53, 5e-324, a long fraction.
    const fine = await call('PATCH', path, {
      key: editor.key,
      raw: '{"fieldValues":[{"fieldName":"doc","value":[9007199254740992,5e-324,1.7976931348623157e308]}]}',
    });
    expect(fine.status).toBe(200);
    expect(fine.body.fieldValues[0].value).toEqual([9007199254740992, 5e-324, 1.7976931348623157e308]);
  });

  it('-0 is stored and answered as 0', async () => {
    const { editor, workspaceId, record } = await jsonWorld();
    const res = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      raw: '{"fieldValues":[{"fieldName":"n","value":-0},{"fieldName":"doc","value":[-0.0,-0e5]}]}',
    });
    expect(res.status).toBe(200);
    expect(res.body.fieldValues).toEqual([fv('doc', [0, 0]), fv('n', 0)]);
    expect(Object.is(res.body.fieldValues[1].value, 0)).toBe(true);
    expect((await row(record.id))?.field_values).toBe(
      '[{"fieldName":"doc","value":[0,0]},{"fieldName":"n","value":0}]',
    );
    expect((await call('GET', `/records/${record.id}`, { key: editor.key })).body).toEqual(res.body);
  });
});

describe('charsets and query encodings', () => {
  it('a JSON body declared in another charset than UTF-8 is 415, nothing written', async () => {
    const { editor, object } = await jsonWorld();
    const before = await countRows('records');
    for (const charset of ['latin1', 'ISO-8859-1', 'utf-16', 'UTF8']) {
      const res = await call('POST', '/records/batch', {
        key: editor.key,
        body: [{ objectId: object.id, fieldValues: [fv('doc', 'x')] }],
        headers: { 'Content-Type': `application/json; charset=${charset}` },
      });
      expectProblem(res, 415, 'unsupported_media_type');
    }
    expect(await countRows('records')).toBe(before);
    const utf8 = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [fv('doc', 'x')] }],
      headers: { 'Content-Type': 'application/json; Charset=UTF-8' },
    });
    expect(utf8.status).toBe(201);
  });

  it('a query value that is not UTF-8 once decoded is 400 naming the parameter, never searched as U+FFFD', async () => {
    const { editor, workspaceId, object } = await jsonWorld();
    await createOne(editor.key, object.id, [fv('doc', '\ufffd')]);
    const list = await call('GET', `/workspaces/${workspaceId}/records?field.doc=%ED%A0%80`, { key: editor.key });
    expectProblem(list, 400, 'invalid_request');
    expect(list.body.errors).toEqual([
      { query: 'field.doc', code: 'invalid_encoding', message: 'not valid UTF-8 once percent-decoded' },
    ]);
    const feed = await call('GET', `/workspaces/${workspaceId}/changes?after=%FF`, { key: editor.key });
    expectProblem(feed, 400, 'invalid_request');
    expect(feed.body.errors).toEqual([
      { query: 'after', code: 'invalid_encoding', message: 'not valid UTF-8 once percent-decoded' },
    ]);
    // The same character sent as UTF-8 is searched.
    const found = await call('GET', `/workspaces/${workspaceId}/records?field.doc=%EF%BF%BD`, { key: editor.key });
    expect(found.body.items.map((r: any) => r.fieldValues[0].value)).toEqual(['\ufffd']);
  });
});

describe('lengths count Unicode code points, in validation and in /openapi.json alike', () => {
  it(
    'an admin name of 150 emoji (300 UTF-16 units) is taken as the document allows; 201 emoji are ' + 'refused',
    async () => {
      const emoji = '😀';
      const doc = (await call('GET', '/openapi.json')).body;
      expect(
        doc.components.schemas.NamedInput?.properties.name.maxLength ??
          doc.paths['/admin/users'].post.requestBody.content['application/json'].schema.properties.name.maxLength,
      ).toBe(200);
      const user = await admin('POST', '/admin/users', { name: emoji.repeat(150) });
      expect(user.status).toBe(201);
      expect(user.body.name).toBe(emoji.repeat(150));
      expect(
        (await env.DB.prepare('SELECT name FROM users WHERE id = ?').bind(user.body.id).first<{ name: string }>())
          ?.name,
      ).toBe(emoji.repeat(150));
      const long = await admin('POST', '/admin/workspaces', { name: emoji.repeat(201) });
      expectProblem(long, 400, 'invalid_request');
      expect(long.body.errors).toEqual([
        { pointer: '/name', code: 'invalid_length', message: 'expected length <=200' },
      ]);
    },
  );

  it('a record name is cut at 10000 code points, never inside a character', async () => {
    const { editor, workspaceId } = await world();
    const object = await newObject([workspaceId], { nameTemplate: '{t}', fields: [{ name: 't', type: 'text' }] });
    const record = await createOne(editor.key, object.id, [fv('t', '😀'.repeat(10_001))]);
    expect(record.name).toBe('😀'.repeat(10_000));
    expect((await row(record.id))?.name).toBe('😀'.repeat(10_000));
  });
});

describe('a body longer than its Content-Length', () => {
  it('is refused 413 having read little past 1 MiB, whatever length it declared, and writes nothing', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'x')]);
    for (const declared of ['20', 'abc', '1048576']) {
      let pulled = 0;
      const chunk = new Uint8Array(64 * 1024).fill(0x20);
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (pulled >= 64 * 1024 * 1024) return controller.close();
          pulled += chunk.byteLength;
          controller.enqueue(chunk);
        },
      });
      const request = new Request(`https://example.com/workspaces/${workspaceId}/records/${record.id}`, {
        method: 'PATCH',
        headers: {
          Authorization: `Bearer ${editor.key}`,
          'Content-Type': 'application/json',
          'Content-Length': declared,
        },
        body,
        duplex: 'half',
      } as RequestInit);
      const { default: worker } = await import('../../src/index.ts');
      const res = await worker.fetch(request, env, { waitUntil() {}, passThroughOnException() {}, props: {} } as never);
      expect([declared, res.status]).toEqual([declared, 413]);
      expect((await res.json()) as { code: string }).toMatchObject({ code: 'payload_too_large' });
      expect(pulled).toBeLessThan(2 * 1024 * 1024);
    }
    expect((await row(record.id))?.version).toBe(1);
  });
});
