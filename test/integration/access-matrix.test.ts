import { describe, expect, it } from 'vitest';
import { operations } from '../../src/routes/table.ts';
import { call, download, fv, liveEvents, until, type Answer } from './helpers.ts';
import { roleWorld, same, type RoleWorld } from './role-world.ts';

/**
 * The access matrix: every operation a key may call, crossed with each place a field or a record
 * can be named in it and each limit a role sets (a hidden field, a read-only field, own rows, an
 * object the role does not list). A hidden field or record answers exactly as one that does not
 * exist; a read-only field is 403 and nothing is written; a read shows nothing hidden. The list of
 * operations comes from the operation table: one added without its probes fails here.
 */

type Kind = 'hidden field' | 'read-only field' | 'own rows' | 'unlisted object';
interface Probe {
  place: string;
  kind: Kind;
  check: (w: RoleWorld) => Promise<void>;
}

const HIDDEN = 'salary';
const HIDDEN_REFERENCE = 'link';
const NONE = 'nothing';
const missingRecord = (w: RoleWorld): number => w.mine.id + 1_000_000;
const missingObject = (w: RoleWorld): number => w.secret.id + 1_000;
const as = (w: RoleWorld, method: string, path: string, body?: unknown): Promise<Answer> =>
  call(method, path, { key: w.member.key, ...(body === undefined ? {} : { body }) });

/**
 * The member asking about a hidden name, then a name no object has: the same answer. The owner
 * (an editor) asking the same is answered 2xx: the probe names a field where one can be named.
 */
const named = (place: string, ask: (w: RoleWorld, name: string) => Promise<Answer>, hidden = HIDDEN): Probe => ({
  place,
  kind: 'hidden field',
  check: async (w) => {
    same(await ask(w, hidden), await ask(w, NONE), [hidden, NONE]);
    const owners = await ask({ ...w, member: w.owner }, hidden);
    expect(owners.status, JSON.stringify(owners.body)).toBeLessThan(300);
  },
});

/** The member asking about another's record (own rows) or a record of an unlisted object, then a missing one. */
const records = (place: string, ask: (w: RoleWorld, id: number) => Promise<Answer>): Probe[] => [
  {
    place,
    kind: 'own rows',
    check: async (w) =>
      same(await ask(w, w.ownersDeal.id), await ask(w, missingRecord(w)), [w.ownersDeal.id, missingRecord(w)]),
  },
  {
    place,
    kind: 'unlisted object',
    check: async (w) =>
      same(await ask(w, w.secretRecord.id), await ask(w, missingRecord(w)), [w.secretRecord.id, missingRecord(w)]),
  },
];

/**
 * The owner uploads a file and puts it in a record (`hold`) the member reads only in part or not at
 * all; the member downloading it is answered as for a file id never issued.
 */
const fileHeld = (
  kind: Kind,
  hold: (w: RoleWorld, file: { id: number; name: string; size: number; contentType: string }) => Promise<Answer>,
): Probe => ({
  place: 'path fileId',
  kind,
  check: async (w) => {
    const up = await call('POST', `/workspaces/${w.workspaceId}/files?name=f.txt`, {
      key: w.owner.key,
      raw: 'bytes',
      headers: { 'Content-Type': 'text/plain' },
    });
    expect(up.status).toBe(201);
    const { id, name, size, contentType } = up.body;
    expect((await hold(w, { id, name, size, contentType })).status).toBeLessThan(300);
    const owners = await download(w.owner.key, `/files/${id}`);
    expect(await owners.text()).toBe('bytes');
    const missing = id + 1_000_000;
    same(await as(w, 'GET', `/files/${id}`), await as(w, 'GET', `/files/${missing}`), [id, missing]);
  },
});

/** The member naming an unlisted object, then one that does not exist. */
const object = (place: string, ask: (w: RoleWorld, id: number) => Promise<Answer>): Probe => ({
  place,
  kind: 'unlisted object',
  check: async (w) => same(await ask(w, w.secret.id), await ask(w, missingObject(w)), [w.secret.id, missingObject(w)]),
});

/** A count of the member's deals in the workspace, with `body` over it. */
const aggregate = (w: RoleWorld, body: Record<string, unknown>): Promise<Answer> =>
  as(w, 'POST', `/workspaces/${w.workspaceId}/records/aggregate`, {
    objectId: w.deal.id,
    measures: [{ op: 'count' }],
    ...body,
  });

/** A write naming the read-only field: 403 at its value, and the record as it was. */
const readOnly = (
  place: string,
  ask: (w: RoleWorld, value: { fieldName: string; value: unknown }) => Promise<Answer>,
) => ({
  place,
  kind: 'read-only field' as const,
  check: async (w: RoleWorld) => {
    const before = await call('GET', `/records/${w.mine.id}`, { key: w.owner.key });
    const answer = await ask(w, fv('stage', 'lead'));
    expect(answer.status).toBe(403);
    expect(answer.body.errors).toContainEqual(expect.objectContaining({ code: 'read_only_field' }));
    expect((await call('GET', `/records/${w.mine.id}`, { key: w.owner.key })).body).toEqual(before.body);
  },
});

/** A write's answer showing no hidden field (the write itself names none). */
const answers = (place: string, write: (w: RoleWorld) => Promise<Answer>): Probe[] =>
  shows(place, write).filter((probe) => probe.kind === 'hidden field');

/** A read showing nothing hidden: no hidden field, no other's record, no record of an unlisted object. */
const shows = (place: string, read: (w: RoleWorld) => Promise<Answer | string>): Probe[] =>
  (['hidden field', 'own rows', 'unlisted object'] as const).map((kind) => ({
    place,
    kind,
    check: async (w) => {
      const answer = await read(w);
      const text = typeof answer === 'string' ? answer : JSON.stringify(answer.body);
      if (typeof answer !== 'string') expect(answer.status).toBeLessThan(300);
      if (kind === 'hidden field') {
        for (const name of [HIDDEN, HIDDEN_REFERENCE]) expect(text).not.toMatch(new RegExp(`"${name}"|\\b${name},`));
      } else {
        const id = kind === 'own rows' ? w.ownersDeal.id : w.secretRecord.id;
        expect(text).not.toMatch(new RegExp(`"(id|recordId)":${id}\\b|^${id},`, 'm'));
      }
    },
  }));

/** The member's live stream from the oldest kept change, once it has sent what their feed holds (and a moment more). */
async function liveText(w: RoleWorld): Promise<string> {
  const feed = await as(w, 'GET', `/workspaces/${w.workspaceId}/changes?limit=1000`);
  const stream = await liveEvents(w.member.key, w.workspaceId, '?start=oldest');
  await until(() => stream.events.length >= feed.body.items.length, 'the live items');
  await new Promise((resolve) => setTimeout(resolve, 200));
  await stream.cancel();
  return stream.events.map((event) => event.data).join('\n');
}

const deals = (w: RoleWorld, fieldValues: unknown[]) => [
  { objectId: w.deal.id, fieldValues: [fv('title', 't'), ...fieldValues] },
];
const editorsOnly = 'only editors may do this: a member under a defined role is refused (403) before anything is named';

const PROBES: Record<string, Probe[] | string> = {
  createRecords: [
    named('fieldValues', (w, name) => as(w, 'POST', '/records/batch', deals(w, [fv(name, 1)]))),
    readOnly('fieldValues', (w, value) => as(w, 'POST', '/records/batch', deals(w, [value]))),
    object('objectId', (w, id) => as(w, 'POST', '/records/batch', [{ objectId: id, fieldValues: [] }])),
    ...records('a reference', (w, id) =>
      as(w, 'POST', '/records/batch', [{ objectId: w.note.id, fieldValues: [fv('deal', id)] }]),
    ),
  ],
  queryRecords: [
    named('filter', (w, name) =>
      as(w, 'POST', `/workspaces/${w.workspaceId}/records/query`, { filter: { field: name, op: 'eq', value: 1 } }),
    ),
    named('sort', (w, name) =>
      as(w, 'POST', `/workspaces/${w.workspaceId}/records/query`, { sort: [{ field: name, direction: 'asc' }] }),
    ),
    named('fields', (w, name) => as(w, 'POST', `/workspaces/${w.workspaceId}/records/query`, { fields: [name] })),
    named(
      'expand',
      (w, name) => as(w, 'POST', `/workspaces/${w.workspaceId}/records/query`, { expand: [name] }),
      HIDDEN_REFERENCE,
    ),
    object('filter objectId', (w, id) =>
      as(w, 'POST', `/workspaces/${w.workspaceId}/records/query`, {
        filter: { field: 'objectId', op: 'eq', value: id },
        count: true,
      }),
    ),
    ...shows('items', (w) => as(w, 'POST', `/workspaces/${w.workspaceId}/records/query`, { count: true })),
  ],
  aggregateRecords: [
    named('groupBy', (w, name) => aggregate(w, { groupBy: [{ field: name }] })),
    named('measures', (w, name) => aggregate(w, { measures: [{ op: 'sum', field: name }] })),
    named('filter', (w, name) => aggregate(w, { filter: { field: name, op: 'eq', value: 1 } })),
    object('objectId', (w, id) => aggregate(w, { objectId: id })),
    ...records('filter id', (w, id) => aggregate(w, { filter: { field: 'id', op: 'eq', value: id } })),
  ],
  upsertRecords: [
    named('matchOn', (w, name) =>
      as(w, 'POST', `/objects/${w.deal.id}/records/upsert`, {
        matchOn: name,
        items: [{ fieldValues: [fv('title', 't'), fv(name, 1)] }],
      }),
    ),
    named('fieldValues', (w, name) =>
      as(w, 'POST', `/objects/${w.deal.id}/records/upsert`, {
        matchOn: 'code',
        items: [{ fieldValues: [fv('code', 'c'), fv('title', 't'), fv(name, 1)] }],
      }),
    ),
    object('path objectId', (w, id) =>
      as(w, 'POST', `/objects/${id}/records/upsert`, {
        matchOn: 'title',
        items: [{ fieldValues: [fv('title', 'x')] }],
      }),
    ),
  ],
  patchRecords: [
    ...records('item id', (w, id) => as(w, 'PATCH', '/records/batch', [{ id, fieldValues: [] }])),
    named('fieldValues', (w, name) =>
      as(w, 'PATCH', '/records/batch', [{ id: w.mine.id, fieldValues: [fv(name, 1)] }]),
    ),
    readOnly('fieldValues', (w, value) => as(w, 'PATCH', '/records/batch', [{ id: w.mine.id, fieldValues: [value] }])),
    ...answers('the answer', (w) =>
      as(w, 'PATCH', '/records/batch', [{ id: w.mine.id, fieldValues: [fv('note', 'm')] }]),
    ),
  ],
  patchWorkspaceRecords: [
    ...records('item id', (w, id) =>
      as(w, 'PATCH', `/workspaces/${w.workspaceId}/records/batch`, [{ id, fieldValues: [] }]),
    ),
    named('fieldValues', (w, name) =>
      as(w, 'PATCH', `/workspaces/${w.workspaceId}/records/batch`, [{ id: w.mine.id, fieldValues: [fv(name, 1)] }]),
    ),
    readOnly('fieldValues', (w, value) =>
      as(w, 'PATCH', `/workspaces/${w.workspaceId}/records/batch`, [{ id: w.mine.id, fieldValues: [value] }]),
    ),
    ...answers('the answer', (w) =>
      as(w, 'PATCH', `/workspaces/${w.workspaceId}/records/batch`, [{ id: w.mine.id, fieldValues: [fv('note', 'm')] }]),
    ),
  ],
  exportRecords: [
    object('objectId', (w, id) =>
      as(w, 'GET', `/workspaces/${w.workspaceId}/records/export?objectId=${id}&format=csv`),
    ),
    ...(['csv', 'ndjson'] as const).flatMap((format) =>
      shows(`${format} rows`, async (w) => {
        const path = `/workspaces/${w.workspaceId}/records/export?objectId=${w.deal.id}&format=${format}`;
        const { exports } = await import('cloudflare:workers');
        const res = await exports.default.fetch(`http://records.test${path}`, {
          headers: { Authorization: `Bearer ${w.member.key}` },
        });
        expect(res.status).toBe(200);
        return res.text();
      }),
    ),
  ],
  createImport: [
    {
      place: 'the import',
      kind: 'hidden field',
      check: async (w) => {
        const answer = await call('POST', `/workspaces/${w.workspaceId}/imports?objectId=${w.deal.id}&mode=create`, {
          key: w.member.key,
          raw: `title,${HIDDEN}\nx,1\n`,
          headers: { 'Content-Type': 'text/csv' },
        });
        expect(answer.status).toBe(403);
      },
    },
  ],
  uploadFile: 'an upload names no record and no field: who may download it is decided on download',
  startUpload: 'an upload names no record and no field: who may download it is decided on download',
  uploadPart: 'an upload in parts is its starter\u2019s alone and names no record or field',
  completeUpload: 'an upload in parts is its starter\u2019s alone and names no record or field',
  abortUpload: 'an upload in parts is its starter\u2019s alone and names no record or field',
  downloadFile: [
    fileHeld('own rows', (w, file) =>
      call('POST', '/records/batch', {
        key: w.owner.key,
        body: [{ objectId: w.deal.id, fieldValues: [fv('title', 'Owned'), fv('scan', [file])] }],
      }),
    ),
    fileHeld('unlisted object', (w, file) =>
      call('POST', '/records/batch', {
        key: w.owner.key,
        body: [{ objectId: w.secret.id, fieldValues: [fv('papers', [file])] }],
      }),
    ),
    fileHeld('hidden field', (w, file) =>
      call('PATCH', `/workspaces/${w.workspaceId}/records/${w.mine.id}`, {
        key: w.owner.key,
        body: { fieldValues: [fv('scan', [file])] },
      }),
    ),
  ],
  listImports: 'a member lists only imports they made, and only editors may import',
  getImport: 'an import is its maker\u2019s, and only editors may import',
  cancelImport: 'an import is its maker\u2019s, and only editors may import',
  listImportErrors: 'an import is its maker\u2019s, and only editors may import',
  patchRecord: [
    ...records('path recordId', (w, id) => as(w, 'PATCH', `/workspaces/${w.workspaceId}/records/${id}`, {})),
    named('fieldValues', (w, name) =>
      as(w, 'PATCH', `/workspaces/${w.workspaceId}/records/${w.mine.id}`, { fieldValues: [fv(name, 1)] }),
    ),
    readOnly('fieldValues', (w, value) =>
      as(w, 'PATCH', `/workspaces/${w.workspaceId}/records/${w.mine.id}`, { fieldValues: [value] }),
    ),
    ...answers('the answer', (w) =>
      as(w, 'PATCH', `/workspaces/${w.workspaceId}/records/${w.mine.id}`, { fieldValues: [fv('note', 'm')] }),
    ),
  ],
  listRecords: [
    named('field filter', (w, name) => as(w, 'GET', `/workspaces/${w.workspaceId}/records?field.${name}=5`)),
    named('expand', (w, name) => as(w, 'GET', `/workspaces/${w.workspaceId}/records?expand=${name}`), HIDDEN_REFERENCE),
    object('objectId', (w, id) => as(w, 'GET', `/workspaces/${w.workspaceId}/records?objectId=${id}`)),
    ...shows('items', (w) => as(w, 'GET', `/workspaces/${w.workspaceId}/records?deleted=include`)),
  ],
  listChanges: shows('items', (w) => as(w, 'GET', `/workspaces/${w.workspaceId}/changes`)),
  openLive: shows('items', (w) => liveText(w)),
  createLiveTicket: 'names no record or field: the stream it opens is probed as openLive',
  listWorkspaceObjects: [
    ...shows('items', (w) => as(w, 'GET', `/workspaces/${w.workspaceId}/objects`)).filter(
      (p) => p.kind === 'hidden field',
    ),
    {
      place: 'items',
      kind: 'unlisted object',
      check: async (w) => {
        const answer = await as(w, 'GET', `/workspaces/${w.workspaceId}/objects`);
        expect(answer.body.items.map((o: { id: number }) => o.id)).not.toContain(w.secret.id);
      },
    },
  ],
  createWebhook: [
    {
      place: 'the subscription',
      kind: 'hidden field',
      check: async (w) =>
        expect(
          (await as(w, 'POST', `/workspaces/${w.workspaceId}/webhooks`, { url: 'https://example.com/h' })).status,
        ).toBe(403),
    },
  ],
  listWebhooks: editorsOnly,
  updateWebhook: editorsOnly,
  deleteWebhook: editorsOnly,
  replayWebhook: editorsOnly,
  listDeliveries: editorsOnly,
  getMe: 'names no record or field',
  deleteRecord: [
    ...records('path recordId', (w, id) => as(w, 'DELETE', `/workspaces/${w.workspaceId}/records/${id}`)),
    ...answers('the answer', (w) => as(w, 'DELETE', `/workspaces/${w.workspaceId}/records/${w.mine.id}`)),
  ],
  restoreRecord: records('path recordId', (w, id) =>
    as(w, 'POST', `/workspaces/${w.workspaceId}/records/${id}/restore`),
  ),
  getRecord: [
    ...records('path recordId', (w, id) => as(w, 'GET', `/records/${id}`)),
    named('expand', (w, name) => as(w, 'GET', `/records/${w.mine.id}?expand=${name}`), HIDDEN_REFERENCE),
    ...shows('the record', (w) => as(w, 'GET', `/records/${w.mine.id}`)).filter((p) => p.kind === 'hidden field'),
  ],
  listReferencingRecords: [
    ...records('path recordId', (w, id) => as(w, 'GET', `/records/${id}/referenced-by`)),
    ...shows('items', (w) => as(w, 'GET', `/records/${w.accountRecord.id}/referenced-by`)),
  ],
  getRecordHistory: [
    ...records('path recordId', (w, id) => as(w, 'GET', `/records/${id}/history`)),
    ...shows('changes', (w) => as(w, 'GET', `/records/${w.mine.id}/history`)).filter((p) => p.kind === 'hidden field'),
  ],
  getWorkspaceRecord: [
    ...records('path recordId', (w, id) => as(w, 'GET', `/workspaces/${w.workspaceId}/records/${id}`)),
    named(
      'expand',
      (w, name) => as(w, 'GET', `/workspaces/${w.workspaceId}/records/${w.mine.id}?expand=${name}`),
      HIDDEN_REFERENCE,
    ),
  ],
};

const keyed = operations.filter((operation) => operation.auth === 'key');

describe('the access matrix', () => {
  it('has the probes of every operation a key may call, or says why none applies', () => {
    expect(keyed.filter((operation) => PROBES[operation.operationId] === undefined).map((o) => o.operationId)).toEqual(
      [],
    );
    expect(Object.keys(PROBES).filter((id) => !keyed.some((o) => o.operationId === id))).toEqual([]);
  });

  const cases = keyed.flatMap((operation) => {
    const probes = PROBES[operation.operationId];
    return typeof probes === 'string' || probes === undefined
      ? []
      : probes.map((probe) => ({ name: `${operation.operationId} × ${probe.kind} × ${probe.place}`, probe }));
  });

  it.each(cases)('$name', async ({ probe }) => {
    await probe.check(await roleWorld());
  });
});
