import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { admin, call, createOne, expectProblem, newObject, world } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const row = (id: number) =>
  env.DB.prepare('SELECT version, name, field_values FROM records WHERE id = ?')
    .bind(id)
    .first<{ version: number; name: string; field_values: string }>();

/** Sends raw bytes, as a client with a broken encoder would. */
async function rawBytes(path: string, key: string, bytes: Uint8Array) {
  const res = await exports.default.fetch(`http://records.test${path}`, {
    method: 'PATCH',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: bytes,
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

describe('nothing is stored other than as sent', () => {
  it('refuses a body that is not UTF-8 instead of storing U+FFFD', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    const bytes = new Uint8Array([
      ...new TextEncoder().encode('{"fieldValues":[{"fieldName":"lastName","value":"caf'),
      0xe9,
      ...new TextEncoder().encode('"}]}'),
    ]);
    const res = await rawBytes(`/workspaces/${workspaceId}/records/${record.id}`, editor.key, bytes);
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.detail).toContain('UTF-8');
    expect((await row(record.id))?.version).toBe(1);
  });

  it('refuses numbers no double holds (1e400) and lone surrogates, naming where', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    const path = `/workspaces/${workspaceId}/records/${record.id}`;
    const big = await call('PATCH', path, {
      key: editor.key,
      raw: '{"fieldValues":[{"fieldName":"age","value":1e400}]}',
    });
    expectProblem(big, 400, 'invalid_request');
    expect(big.body.errors).toEqual([
      { pointer: '/fieldValues/0/value', code: 'invalid_number', message: 'number out of range' },
    ]);
    const lone = await call('PATCH', path, {
      key: editor.key,
      raw: '{"fieldValues":[{"fieldName":"lastName","value":"a\\ud800b"}]}',
    });
    expectProblem(lone, 400, 'invalid_request');
    expect(lone.body.errors).toEqual([
      { pointer: '/fieldValues/0/value', code: 'invalid_string', message: 'string holds a lone surrogate' },
    ]);
    const key = await call('POST', '/records/batch', {
      key: editor.key,
      raw: `[{"objectId":${object.id},"fieldValues":[],"\\udc00":1}]`,
    });
    expectProblem(key, 400, 'invalid_request');
    expect(key.body.errors[0]).toMatchObject({ pointer: '/0/\udc00', code: 'invalid_string' });
    expect((await row(record.id))?.version).toBe(1);
  });

  it('a PATCH body that is an array is 400, not taken as {}', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    const res = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, { key: editor.key, body: [] });
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors).toEqual([{ pointer: '', code: 'invalid_type', message: 'expected an object' }]);
  });

  // An empty If-Match is proven over real HTTP (test/e2e): this runtime drops empty headers on the way in.

  it('U+0000 in a value is stored as sent, and a name it would start is trimmed of it', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
    const res = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('firstName', '\u0000\u0000Zed')] },
    });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('Zed');
    expect(res.body.fieldValues[0]).toEqual(fv('firstName', '\u0000\u0000Zed'));
    expect((await call('GET', `/records/${record.id}`, { key: editor.key })).body).toEqual(res.body);
    // A create with the same value is fine too.
    const created = await call('POST', '/records/batch', {
      key: editor.key,
      body: [{ objectId: object.id, fieldValues: [fv('firstName', '\u0000'), fv('lastName', '\u0000x\u0000y')] }],
    });
    expect(created.status).toBe(201);
    expect(created.body[0].record.name).toBe('x\u0000y');
  });

  it('an admin name with a control character is 400, not a 500 from storage', async () => {
    for (const path of ['/admin/users', '/admin/workspaces']) {
      const res = await admin('POST', path, { name: '\u0000boss' });
      expectProblem(res, 400, 'invalid_request');
      expect(res.body.errors[0]).toMatchObject({ pointer: '/name', code: 'invalid_format' });
    }
  });

  it(
    'a json value nests at most 64 levels (422 beyond, in a patch, a create and a batch), and nothing ' + 'is written',
    async () => {
      const { editor, workspaceId } = await world();
      const object = await newObject([workspaceId], { nameTemplate: '{doc}', fields: [{ name: 'doc', type: 'json' }] });
      const nest = (levels: number): unknown => (levels === 0 ? 1 : [nest(levels - 1)]);
      const record = await createOne(editor.key, object.id, [fv('doc', nest(64))]);
      const deep = [fv('doc', nest(65))];
      const patch = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
        key: editor.key,
        body: { fieldValues: deep },
      });
      expectProblem(patch, 422, 'unprocessable');
      expect(patch.body.errors[0]).toMatchObject({ pointer: '/fieldValues/0/value', code: 'invalid_value' });
      const batch = await call('PATCH', '/records/batch', {
        key: editor.key,
        body: [{ id: record.id, fieldValues: deep }],
      });
      expectProblem(batch, 422, 'unprocessable');
      const create = await call('POST', '/records/batch', {
        key: editor.key,
        body: [{ objectId: object.id, fieldValues: [fv('doc', nest(90))] }],
      });
      expectProblem(create, 422, 'unprocessable');
      // Past the body's own bound (100 levels in all) it is a malformed body: 400.
      const deeper = await call('POST', '/records/batch', {
        key: editor.key,
        body: [{ objectId: object.id, fieldValues: [fv('doc', nest(999))] }],
      });
      expectProblem(deeper, 400, 'invalid_request');
      expect(deeper.body.errors[0]).toMatchObject({ code: 'too_deep' });
      expect((await row(record.id))?.version).toBe(1);
    },
  );

  it('a record whose field values would pass 1 MiB is 422 record_too_large, nothing written', async () => {
    const { editor, workspaceId } = await world();
    const fields = ['a', 'b', 'c', 'd'].map((name) => ({ name, type: 'text' }));
    const object = await newObject([workspaceId], { nameTemplate: 'big', fields });
    const third = '€'.repeat(100_000); // 300 000 bytes as UTF-8
    const record = await createOne(editor.key, object.id, [fv('a', third), fv('b', third), fv('c', third)]);
    const res = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
      key: editor.key,
      body: { fieldValues: [fv('d', third)] },
    });
    expectProblem(res, 422, 'unprocessable');
    expect(res.body.errors).toEqual([
      { pointer: '/fieldValues', code: 'record_too_large', message: "the record's field values exceed 1048576 bytes" },
    ]);
    expect((await row(record.id))?.version).toBe(1);
    // Replacing a value instead of adding one stays within the bound.
    expect(
      (
        await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
          key: editor.key,
          body: { fieldValues: [fv('c', 'small'), fv('d', third)] },
        })
      ).body.version,
    ).toBe(2);
  });
});

describe('"changes nothing" compares values by field name', () => {
  it('{} after the definition reordered and dropped fields leaves version and updatedAt alone', async () => {
    const { editor, workspaceId, object } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'A'), fv('lastName', 'B'), fv('age', 3)]);
    const def = (await admin('GET', `/admin/objects/${object.id}`)).body;
    const reordered = [...def.fields].reverse().filter((f: any) => f.name !== 'age');
    expect(
      (
        await admin('PUT', `/admin/objects/${object.id}`, {
          name: def.name,
          workspaceIds: def.workspaceIds,
          nameTemplate: def.nameTemplate,
          fields: reordered,
        })
      ).status,
    ).toBe(200);
    for (const body of [{}, { fieldValues: [fv('lastName', 'B')] }]) {
      const res = await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, { key: editor.key, body });
      expect(res.body).toMatchObject({ version: 1, updatedAt: record.updatedAt });
    }
    expect((await row(record.id))?.version).toBe(1);
  });
});

describe('each patch keeps its own 10 s', () => {
  it(
    "a patch grouped with an older one is not answered 503 on the older one's deadline",
    { timeout: 40_000 },
    async () => {
      const { editor, workspaceId, object } = await world();
      const record = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
      const path = `/workspaces/${workspaceId}/records/${record.id}`;
      // Every write of the record loses, as to a writer that always comes first.
      await env.DB.exec(
        `CREATE TRIGGER always_conflict BEFORE UPDATE ON records WHEN NEW.id = ${record.id} BEGIN SELECT ` +
          `RAISE(ABORT, 'version_conflict'); END`,
      );
      const start = Date.now();
      const patch = (age: number) => call('PATCH', path, { key: editor.key, body: { fieldValues: [fv('age', age)] } });
      const blocker = patch(1); // holds the object's turn until its own 10 s pass
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const older = patch(2); // queued at ~1 s
      await new Promise((resolve) => setTimeout(resolve, 4000));
      const younger = patch(3); // queued at ~5 s; grouped with `older` once the blocker gives up
      await new Promise((resolve) => setTimeout(resolve, 7500));
      await env.DB.exec('DROP TRIGGER always_conflict'); // at ~12.5 s: writes go through again
      const [b, o, y] = await Promise.all([blocker, older, younger]);
      expectProblem(b, 503, 'unavailable');
      expectProblem(o, 503, 'unavailable');
      // The younger patch had until ~15 s: it is written once the conflict ends.
      expect(y.status).toBe(200);
      expect(y.body).toMatchObject({ version: 2, fieldValues: [fv('firstName', 'A'), fv('age', 3)] });
      expect(Date.now() - start).toBeGreaterThanOrEqual(12_000);
    },
  );
});
