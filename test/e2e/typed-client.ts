import createClient, { type Middleware } from 'openapi-fetch';
// Generated from /openapi.json at test time by openapi-typescript (clients.test.ts); never committed.
import type { components, paths } from './generated/api.ts';

type Record = components['schemas']['Record'];
type Problem = components['schemas']['Problem'];

export interface WalkThrough {
  created: Record[];
  read: { record: Record; etag: string | null };
  patched: Record;
  stale: { status: number; problem: Problem };
  invalid: { status: number; problem: Problem };
  admin: {
    users: string[];
    workspaces: string[];
    members: { userId: number; role?: string | undefined }[];
    objects: { name: string; version: number }[];
    workspaceInUse: { status: number; problem: Problem };
    userDeleted: number;
    keyAfterDelete: number;
    /** A keyed workspace create sent twice: the ids answered, and whether the second was a replay. */
    keyed: { ids: (number | undefined)[]; replayed: string | null };
  };
  /** A Company whose `ceo` references the first record: read with it expanded, and what references it. */
  references: { expanded: unknown; referencedBy: { recordId: number; field: string }[] };
  /** The user's client: the bookmark each request sent, and the one each answer carried. */
  bookmarks: { sent: (string | null)[]; answered: (string | null)[] };
}

/**
 * Sends the newest X-D1-Bookmark answered with every next request, as a client that must read
 * its own writes (even where a replica serves its reads) does.
 */
function followBookmarks(): { middleware: Middleware; seen: WalkThrough['bookmarks'] } {
  const seen: WalkThrough['bookmarks'] = { sent: [], answered: [] };
  let bookmark: string | null = null;
  const middleware: Middleware = {
    onRequest({ request }) {
      seen.sent.push(bookmark);
      if (bookmark !== null) request.headers.set('X-D1-Bookmark', bookmark);
      return request;
    },
    onResponse({ response }) {
      const answered = response.headers.get('X-D1-Bookmark');
      seen.answered.push(answered);
      bookmark = answered ?? bookmark;
      return response;
    },
  };
  return { middleware, seen };
}

/**
 * The README's walk-through, written against a client generated from /openapi.json: paths,
 * bodies, parameters and answers are all type-checked against the document (`tsc` runs on this
 * file in clients.test.ts before it runs), so the document is proven usable, not only valid.
 */
export async function walkThrough(baseUrl: string, adminToken: string): Promise<WalkThrough> {
  const admin = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${adminToken}` } });
  const user = need(await admin.POST('/admin/users', { body: { name: 'Ada' } }));
  const key = need(await admin.POST('/admin/users/{userId}/keys', { params: { path: { userId: String(user.id) } } }));
  const workspace = need(await admin.POST('/admin/workspaces', { body: { name: 'Sales' } }));
  need(
    await admin.PUT('/admin/workspaces/{workspaceId}/members/{userId}', {
      params: { path: { workspaceId: String(workspace.id), userId: String(user.id) } },
      body: { role: 'editor' },
    }),
  );
  const object = need(
    await admin.POST('/admin/objects', {
      body: {
        name: 'Contact',
        workspaceIds: [workspace.id],
        nameTemplate: '{firstName} {lastName}',
        fields: [
          { name: 'firstName', type: 'text', required: true },
          { name: 'lastName', type: 'text' },
          { name: 'stage', type: 'select', options: ['lead', 'customer'] },
        ],
      },
    }),
  );

  const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${key.key}` } });
  const bookmarks = followBookmarks();
  client.use(bookmarks.middleware);
  const created = need(
    await client.POST('/records/batch', {
      body: [
        {
          objectId: object.id,
          fieldValues: [
            { fieldName: 'firstName', value: 'Ada' },
            { fieldName: 'lastName', value: 'Lovelace' },
          ],
        },
        {
          objectId: object.id,
          fieldValues: [
            { fieldName: 'firstName', value: 'Alan' },
            { fieldName: 'stage', value: 'lead' },
          ],
        },
      ],
    }),
  ).map((item) => item.record);
  const first = created[0];
  if (first === undefined) throw new Error('nothing created');
  const recordPath = { workspaceId: String(workspace.id), recordId: String(first.id) };

  const read = await client.GET('/records/{recordId}', { params: { path: { recordId: String(first.id) } } });
  const patched = need(
    await client.PATCH('/workspaces/{workspaceId}/records/{recordId}', {
      params: { path: recordPath, header: { 'If-Match': read.response.headers.get('ETag') ?? '*' } },
      body: { fieldValues: [{ fieldName: 'stage', value: 'customer' }] },
    }),
  );
  const stale = await client.PATCH('/workspaces/{workspaceId}/records/{recordId}', {
    params: { path: recordPath, header: { 'If-Match': '"1"' } },
    body: { fieldValues: [] },
  });
  const invalid = await client.POST('/records/batch', {
    body: [{ objectId: object.id, fieldValues: [{ fieldName: 'stage', value: 'won' }] }],
  });

  // The admin API's lists and deletes, typed the same way.
  const users = need(await admin.GET('/admin/users', { params: { query: { limit: 100 } } }));
  const workspaces = need(await admin.GET('/admin/workspaces', { params: { query: { limit: 100 } } }));
  const members = need(
    await admin.GET('/admin/workspaces/{workspaceId}/members', {
      params: { path: { workspaceId: String(workspace.id) } },
    }),
  );
  const objects = need(await admin.GET('/admin/objects', { params: { query: {} } }));
  const workspaceInUse = await admin.DELETE('/admin/workspaces/{workspaceId}', {
    params: { path: { workspaceId: String(workspace.id) } },
  });
  // References: a field type, a read parameter and an operation of their own, typed like the rest.
  const company = need(
    await admin.POST('/admin/objects', {
      body: {
        name: 'Company',
        workspaceIds: [workspace.id],
        fields: [{ name: 'ceo', type: 'reference', target: object.id, onDelete: 'restrict' }],
      },
    }),
  );
  const [acme] = need(
    await client.POST('/records/batch', {
      body: [{ objectId: company.id, fieldValues: [{ fieldName: 'ceo', value: first.id }] }],
    }),
  );
  const expanded = need(
    await client.GET('/records/{recordId}', {
      params: { path: { recordId: String(acme?.record.id) }, query: { expand: 'ceo' } },
    }),
  );
  const referencedBy = need(
    await client.GET('/records/{recordId}/referenced-by', {
      params: { path: { recordId: String(first.id) }, query: { limit: 10 } },
    }),
  );
  const userDeleted = await admin.DELETE('/admin/users/{userId}', { params: { path: { userId: String(user.id) } } });
  const keyAfterDelete = await client.GET('/me');
  // An admin write with an Idempotency-Key, sent twice: one workspace, its answer replayed.
  const keyed = { params: { header: { 'Idempotency-Key': 'typed-workspace' } }, body: { name: 'Keyed' } };
  const keyedFirst = await admin.POST('/admin/workspaces', keyed);
  const again = await admin.POST('/admin/workspaces', keyed);
  return {
    admin: {
      users: users.items.map((u) => u.name),
      workspaces: workspaces.items.map((w) => w.name),
      members: members.items.map((m) => ({ userId: m.userId, role: m.role })),
      objects: objects.items.map((o) => ({ name: o.name, version: o.version })),
      workspaceInUse: { status: workspaceInUse.response.status, problem: problem(workspaceInUse.error) },
      userDeleted: userDeleted.response.status,
      keyAfterDelete: keyAfterDelete.response.status,
      keyed: {
        ids: [keyedFirst.data?.id, again.data?.id],
        replayed: again.response.headers.get('Idempotent-Replayed'),
      },
    },
    created,
    read: { record: need(read), etag: read.response.headers.get('ETag') },
    patched,
    stale: { status: stale.response.status, problem: problem(stale.error) },
    invalid: { status: invalid.response.status, problem: problem(invalid.error) },
    references: {
      expanded: expanded.expanded,
      referencedBy: referencedBy.items.map((item) => ({ recordId: item.recordId, field: item.field })),
    },
    bookmarks: bookmarks.seen,
  };
}

function need<T>(answer: { data?: T; error?: unknown; response: Response }): T {
  if (answer.data === undefined) throw new Error(`${answer.response.status}: ${JSON.stringify(answer.error)}`);
  return answer.data;
}

function problem(error: Problem | undefined): Problem {
  if (error === undefined) throw new Error('expected a problem');
  return error;
}
