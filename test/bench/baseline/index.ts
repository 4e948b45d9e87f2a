import { DurableObject } from 'cloudflare:workers';
import { chaosEnv, type ChaosVars } from '../../chaos/faults.ts';

/**
 * Baseline Worker: the same D1 statements the service needs for each benchmarked operation,
 * nothing else. Records are shared with one workspace, like the service's. Its D1 binding goes
 * through the same wrapper as the chaos build's, so the geo simulation delays it alike (with no
 * GEO_ vars set, the wrapper only passes calls through).
 */
interface Env extends ChaosVars {
  DB: D1Database;
  OBJECTS: DurableObjectNamespace<BareObject>;
}

const INSERT = `INSERT INTO records (id, object_id, object_version, name, field_values, creation_type, version, deleted,
    owned_by, created_at, created_by, updated_at, updated_by, is_template)
  SELECT coalesce(max(id), 0) + 1, 1, 1, 'Bench', ?, 'User', 1, 0, 1, ?, 1, ?, 1, 0 FROM records`;
const SHARE = 'INSERT INTO record_workspaces (record_id, workspace_id) SELECT max(id), 1 FROM records';
const UPDATE = 'UPDATE records SET version = version + 1, field_values = ?, updated_at = ? WHERE id = ?';

const values = (n: unknown): string => JSON.stringify([{ fieldName: 'n0', value: n }]);

async function createTwenty(db: D1Database): Promise<void> {
  const now = Date.now();
  await db.batch(
    Array.from({ length: 20 }, (_, i) => [db.prepare(INSERT).bind(values(i), now, now), db.prepare(SHARE)]).flat(),
  );
}

/**
 * The same one-record UPDATE, made from a Durable Object of the same kind as the service's record
 * objects (SQLite-backed) and nothing else: `/fresh-object/records/{id}` sends each request to an
 * object nobody used, as a record's first patch is. What it answers is the most a cold patch of
 * the service can reach here, whatever the service does besides.
 */
export class BareObject extends DurableObject<Env> {
  async patch(id: number, value: number): Promise<void> {
    await this.env.DB.prepare(UPDATE).bind(values(value), Date.now(), id).run();
  }
}

export default {
  async fetch(request: Request, rawEnv: Env): Promise<Response> {
    const url = new URL(request.url);
    const db = chaosEnv(rawEnv, 'worker').DB;
    if (url.pathname === '/health') return Response.json({ status: 'ok' });
    if (url.pathname === '/setup') {
      const now = Date.now();
      await db.batch([
        db.prepare("INSERT INTO users (id, name, created_at) VALUES (1, 'bench', ?)").bind(now),
        db.prepare("INSERT INTO workspaces (id, name, created_at) VALUES (1, 'bench', ?)").bind(now),
        db.prepare('INSERT INTO objects (id, current_version) VALUES (1, 1)'),
        db.prepare("INSERT INTO object_versions VALUES (1, 1, 'Bench', NULL, '[]', '[1]', ?)").bind(now),
      ]);
      for (let i = 0; i < 50; i++) await createTwenty(db);
      return Response.json({ ok: true });
    }
    if (url.pathname === '/setup-lists') {
      // Up to 10 000 records, and one change row for each, for the list and feed scenarios.
      while (((await db.prepare('SELECT max(id) AS n FROM records').first<{ n: number }>())?.n ?? 0) < 10_000)
        await createTwenty(db);
      await db
        .prepare(
          `INSERT INTO changes (record_id, version, type, at, by, data)
        SELECT id, 1, 'created', created_at, 1, json_object('id', id, 'fieldValues', json(field_values))
        FROM records
        WHERE id NOT IN (SELECT record_id FROM changes)`,
        )
        .run();
      return Response.json({ ok: true });
    }
    const page = /^\/workspaces\/1\/(records|changes)$/.exec(url.pathname)?.[1];
    if (page !== undefined && request.method === 'GET') {
      const after = Number(url.searchParams.get('after') ?? 0);
      const sql =
        page === 'records'
          ? 'SELECT r.* FROM record_workspaces rw JOIN records r ON r.id = rw.record_id ' +
            'WHERE rw.workspace_id = 1 AND rw.record_id > ? ORDER BY rw.record_id LIMIT 51'
          : 'SELECT * FROM changes WHERE seq > ? ORDER BY seq LIMIT 100';
      return Response.json((await db.prepare(sql).bind(after).all()).results);
    }
    if (url.pathname === '/records/batch' && request.method === 'POST') {
      await createTwenty(db);
      return new Response(null, { status: 201 });
    }
    const read = /^\/records\/(\d+)$/.exec(url.pathname)?.[1];
    if (read !== undefined && request.method === 'GET') {
      return Response.json(await db.prepare('SELECT * FROM records WHERE id = ?').bind(Number(read)).first());
    }
    const gone = /^\/records\/(\d+)$/.exec(url.pathname)?.[1];
    if (gone !== undefined && request.method === 'DELETE') {
      await db
        .prepare('UPDATE records SET version = version + 1, deleted = 1, updated_at = ? WHERE id = ?')
        .bind(Date.now(), Number(gone))
        .run();
      return Response.json({ ok: true });
    }
    const body = (await request.json()) as { ids?: number[]; value: number };
    if (url.pathname === '/records/batch' && request.method === 'PATCH') {
      const now = Date.now();
      await db.batch((body.ids ?? []).map((id) => db.prepare(UPDATE).bind(values(body.value), now, id)));
      return Response.json({ ok: true });
    }
    const viaObject = /^\/fresh-object\/records\/(\d+)$/.exec(url.pathname)?.[1];
    if (viaObject !== undefined && request.method === 'PATCH') {
      // Named, as a record's object is (by its id), and by a name nobody used.
      const object = rawEnv.OBJECTS.idFromName(`fresh-${crypto.randomUUID()}`);
      await rawEnv.OBJECTS.get(object).patch(Number(viaObject), body.value);
      return Response.json({ ok: true });
    }
    const id = /^\/records\/(\d+)$/.exec(url.pathname)?.[1];
    if (id !== undefined && request.method === 'PATCH') {
      await db.prepare(UPDATE).bind(values(body.value), Date.now(), Number(id)).run();
      return Response.json({ ok: true });
    }
    return new Response('not found', { status: 404 });
  },
} satisfies ExportedHandler<Env>;
