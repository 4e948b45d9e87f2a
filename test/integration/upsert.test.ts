import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ROUTE } from '../../src/tenancy/routes.ts';
import { createContext } from '../../src/context.ts';
import { sha256Hex } from '../../src/http/auth.ts';
import { runWrite } from '../../src/write/engine.ts';
import type { WriteCall } from '../../src/write/write.ts';
import { admin, call, createOne, expectProblem, newUser, newWorkspace } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

const FIELDS = [
  { name: 'email', type: 'email', unique: true },
  { name: 'code', type: 'integer', unique: true },
  { name: 'fullName', type: 'text', required: true },
  { name: 'score', type: 'integer' },
];

async function setup() {
  const editor = await newUser('editor');
  const viewer = await newUser('viewer');
  const stranger = await newUser('stranger');
  const workspaceId = await newWorkspace({ [editor.id]: 'editor', [viewer.id]: 'viewer' });
  const object = (
    await admin('POST', '/admin/objects', { name: 'Person', workspaceIds: [workspaceId], fields: FIELDS })
  ).body;
  return { editor, viewer, stranger, workspaceId, object };
}

const upsert = (key: string, objectId: number, body: unknown, headers: Record<string, string> = {}) =>
  call('POST', `/objects/${objectId}/records/upsert`, { key, body, headers });

async function recordsOf(objectId: number) {
  const rows = await env.DB.prepare('SELECT id, version, field_values FROM records WHERE object_id = ? ORDER BY id')
    .bind(objectId)
    .all<any>();
  return rows.results.map((r) => ({ id: r.id, version: r.version, fieldValues: JSON.parse(r.field_values) }));
}

describe('POST /objects/{objectId}/records/upsert', () => {
  it(
    'updates the record holding the value (any case), creates the others, says which; a later read ' + 'agrees',
    async () => {
      const { editor, object } = await setup();
      const ada = await createOne(editor.key, object.id, [
        fv('email', 'ada@example.com'),
        fv('fullName', 'Ada'),
        fv('score', 1),
      ]);
      const same = await createOne(editor.key, object.id, [fv('email', 'same@example.com'), fv('fullName', 'Same')]);
      const answer = await upsert(editor.key, object.id, {
        matchOn: 'email',
        items: [
          { fieldValues: [fv('email', 'ADA@example.com'), fv('score', 2)] },
          { fieldValues: [fv('email', 'new@example.com'), fv('fullName', 'New')] },
          { fieldValues: [fv('email', 'same@example.com'), fv('fullName', 'Same')] },
        ],
      });
      expect(answer.status).toBe(200);
      expect(answer.body.map((item: any) => [item.status, item.result, item.record.id])).toEqual([
        ['Succeeded', 'updated', ada.id],
        ['Succeeded', 'created', same.id + 1],
        ['Succeeded', 'unchanged', same.id],
      ]);
      // The matched value is written as sent: the update takes the new spelling.
      expect(answer.body[0].record.fieldValues).toEqual([
        fv('email', 'ADA@example.com'),
        fv('fullName', 'Ada'),
        fv('score', 2),
      ]);
      expect(answer.body[0].record.version).toBe(2);
      for (const item of answer.body) {
        const read = await call('GET', `/records/${item.record.id}`, { key: editor.key });
        expect(read.body).toEqual(item.record);
      }
    },
  );

  it(
    'is all or nothing, checks the body, and answers 400 for the same value twice or a field that is ' + 'not unique',
    async () => {
      const { editor, viewer, stranger, object } = await setup();
      const holder = await createOne(editor.key, object.id, [
        fv('email', 'a@x.org'),
        fv('fullName', 'A'),
        fv('code', 1),
      ]);
      const before = await recordsOf(object.id);
      const bad = await upsert(editor.key, object.id, {
        matchOn: 'email',
        items: [
          { fieldValues: [fv('email', 'a@x.org'), fv('score', 5)] },
          { fieldValues: [fv('email', 'b@x.org')] }, // a create without the required fullName
        ],
      });
      expectProblem(bad, 422, 'unprocessable');
      expect(bad.body.errors[0].pointer).toBe('/items/1/fieldValues');
      // A create whose other unique value is held: 409 at its pointer.
      const clash = await upsert(editor.key, object.id, {
        matchOn: 'email',
        items: [{ fieldValues: [fv('email', 'c@x.org'), fv('fullName', 'C'), fv('code', 1)] }],
      });
      expectProblem(clash, 409, 'conflict');
      expect(clash.body.errors).toEqual([
        {
          pointer: '/items/0/fieldValues/2',
          code: 'unique_violation',
          message: `record ${holder.id} holds this value`,
        },
      ]);
      expect(await recordsOf(object.id)).toEqual(before);
      const twice = await upsert(editor.key, object.id, {
        matchOn: 'email',
        items: [{ fieldValues: [fv('email', 'a@x.org')] }, { fieldValues: [fv('email', 'A@X.org')] }],
      });
      expectProblem(twice, 400, 'invalid_request');
      expect(twice.body.errors[0].pointer).toBe('/items/1/fieldValues/0/value');
      const notUnique = await upsert(editor.key, object.id, {
        matchOn: 'score',
        items: [{ fieldValues: [fv('score', 1)] }],
      });
      expectProblem(notUnique, 400, 'invalid_request');
      expect(notUnique.body.errors[0].pointer).toBe('/matchOn');
      const missing = await upsert(editor.key, object.id, {
        matchOn: 'email',
        items: [{ fieldValues: [fv('fullName', 'x')] }],
      });
      expect(missing.body.errors[0]).toMatchObject({ pointer: '/items/0/fieldValues', code: 'required' });
      const empty = await upsert(editor.key, object.id, { matchOn: 'email', items: [] });
      expectProblem(empty, 400, 'invalid_request');
      const viewing = await upsert(viewer.key, object.id, {
        matchOn: 'email',
        items: [{ fieldValues: [fv('email', 'a@x.org')] }],
      });
      expectProblem(viewing, 403, 'forbidden');
      expect(viewing.body.errors[0].pointer).toBe('/items/0');
      expectProblem(
        await upsert(stranger.key, object.id, { matchOn: 'email', items: [{ fieldValues: [fv('email', 'a@x.org')] }] }),
        404,
        'not_found',
      );
      expect(await recordsOf(object.id)).toEqual(before);
    },
  );

  it('20 concurrent upserts of one new value create exactly one record; the others update it', async () => {
    const { editor, object } = await setup();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        upsert(editor.key, object.id, {
          matchOn: 'code',
          items: [{ fieldValues: [fv('code', 42), fv('fullName', 'N'), fv('score', i)] }],
        }),
      ),
    );
    for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const results = answers.map((a) => a.body[0].result);
    expect(results.filter((r) => r === 'created')).toHaveLength(1);
    const records = await recordsOf(object.id);
    expect(records).toHaveLength(1);
    expect(new Set(answers.map((a) => a.body[0].record.id))).toEqual(new Set([records[0]?.id]));
  });

  it('replays with an Idempotency-Key: the same answer byte for byte, nothing written again', async () => {
    const { editor, object } = await setup();
    await createOne(editor.key, object.id, [fv('email', 'k@x.org'), fv('fullName', 'K')]);
    const body = {
      matchOn: 'email',
      items: [
        { fieldValues: [fv('email', 'k@x.org'), fv('score', 9)] },
        { fieldValues: [fv('email', 'l@x.org'), fv('fullName', 'L')] },
      ],
    };
    const first = await upsert(editor.key, object.id, body, { 'Idempotency-Key': 'up-1' });
    expect(first.status).toBe(200);
    const after = await recordsOf(object.id);
    const again = await upsert(editor.key, object.id, body, { 'Idempotency-Key': 'up-1' });
    expect(again.status).toBe(200);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await recordsOf(object.id)).toEqual(after);
    const other = await upsert(
      editor.key,
      object.id,
      { ...body, items: [{ fieldValues: [fv('email', 'k@x.org'), fv('score', 10)] }] },
      { 'Idempotency-Key': 'up-1' },
    );
    expectProblem(other, 422, 'unprocessable');
    expect(other.body.errors[0].code).toBe('idempotency_key_reused');
  });

  it(
    'run again under the same write id (a lost reply, a re-run), an upsert is answered from its ledger ' +
      'row: nothing twice',
    async () => {
      const { editor, object } = await setup();
      await createOne(editor.key, object.id, [fv('email', 'r@x.org'), fv('fullName', 'R')]);
      const context = () =>
        createContext(env, 'rerun', {
          waitUntil() {},
          passThroughOnException() {},
          props: {},
        } as unknown as ExecutionContext);
      const call: WriteCall = {
        id: 'rerun-write-1',
        requestId: 'rerun',
        tenant: DEFAULT_ROUTE,
        keyHash: await sha256Hex(editor.key),
        write: {
          kind: 'upsert',
          objectId: object.id,
          body: {
            matchOn: 'email',
            items: [
              { fieldValues: [fv('email', 'r@x.org'), fv('score', 3)] },
              { fieldValues: [fv('email', 's@x.org'), fv('fullName', 'S')] },
            ],
          },
        },
      };
      const text = (answer: { body: Uint8Array }) => new TextDecoder().decode(answer.body);
      const first = await runWrite(context(), call);
      const after = await recordsOf(object.id);
      const again = await runWrite(context(), { ...call, again: true });
      expect([again.status, text(again)]).toEqual([first.status, text(first)]);
      expect(JSON.parse(text(first)).map((item: { result: string }) => item.result)).toEqual(['updated', 'created']);
      expect(await recordsOf(object.id)).toEqual(after);
    },
  );
});
