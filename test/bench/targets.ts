import type { LocalWorker } from '../e2e/server.ts';

/** What the benchmarks drive: the service and the bare baseline, set up alike. */

export const ADMIN = 'bench-admin-token';

export interface Target {
  url: string;
  headers: Record<string, string>;
  ids: number[];
  /** Path of one-record patches; `{id}` is replaced. */
  patchPath: string;
  patchBody: (value: number) => unknown;
  batchBody: (ids: number[], value: number) => unknown;
  createBody: unknown;
  /** Records nobody patched yet, taken one per request by cold scenarios. */
  fresh?: number[];
  /** The service's `/workspaces/{id}` (the baseline has workspace 1 and no cursors). */
  workspacePath?: string;
  /** The service's object of the records. */
  objectId?: number;
  /** CPU time used so far by the target's wrangler dev process tree, in ms. */
  cpuMs: () => number | undefined;
  /** Cursors of every list and feed page, for the list scenarios. */
  cursors?: { records: string[]; changes: string[] };
}

export async function json(url: string, method: string, headers: Record<string, string>, body?: unknown): Promise<any> {
  const res = await fetch(url, {
    method,
    headers: { ...headers, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? undefined : res.json();
}

export async function serviceTarget(worker: LocalWorker, records: number): Promise<Target> {
  const admin = { Authorization: `Bearer ${ADMIN}` };
  const user = await json(`${worker.url}/admin/users`, 'POST', admin, { name: 'bench' });
  const { key } = await json(`${worker.url}/admin/users/${user.id}/keys`, 'POST', admin);
  const ws = await json(`${worker.url}/admin/workspaces`, 'POST', admin, { name: 'bench' });
  const object = await json(`${worker.url}/admin/objects`, 'POST', admin, {
    name: 'Bench',
    workspaceIds: [ws.id],
    fields: [
      { name: 'n0', type: 'integer' },
      { name: 'n1', type: 'text' },
      // Computed on every write the benchmark makes: what a formula costs is in the ratios.
      { name: 'twice', type: 'formula', expression: 'n0 * 2', resultType: 'number' },
    ],
  });
  // The caller holds a defined role (every right, a field hidden) unless BENCH_ROLE=editor: what
  // a role costs is measured, not assumed.
  const member =
    process.env.BENCH_ROLE === 'editor'
      ? { role: 'editor' }
      : {
          roleId: (
            await json(`${worker.url}/admin/roles`, 'POST', admin, {
              name: 'bench',
              objects: [
                {
                  objectId: object.id,
                  read: true,
                  create: true,
                  update: true,
                  delete: true,
                  fields: { n1: 'hidden' },
                },
              ],
            })
          ).id,
        };
  await json(`${worker.url}/admin/workspaces/${ws.id}/members/${user.id}`, 'PUT', admin, member);
  const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
  const createBody = Array.from({ length: 20 }, (_, i) => ({
    objectId: object.id,
    fieldValues: [{ fieldName: 'n0', value: i }],
  }));
  const ids: number[] = [];
  while (ids.length < records)
    ids.push(
      ...(await json(`${worker.url}/records/batch`, 'POST', headers, createBody)).map((item: any) => item.record.id),
    );
  return {
    url: worker.url,
    cpuMs: worker.cpuMs,
    headers,
    ids,
    patchPath: `/workspaces/${ws.id}/records/{id}`,
    workspacePath: `/workspaces/${ws.id}`,
    objectId: object.id,
    patchBody: (value) => ({ fieldValues: [{ fieldName: 'n0', value }] }),
    batchBody: (batch, value) => batch.map((id) => ({ id, fieldValues: [{ fieldName: 'n0', value }] })),
    createBody,
  };
}

export async function baselineTarget(worker: LocalWorker, records: number): Promise<Target> {
  await json(`${worker.url}/setup`, 'POST', {});
  return {
    url: worker.url,
    cpuMs: worker.cpuMs,
    headers: { 'Content-Type': 'application/json' },
    ids: Array.from({ length: records }, (_, i) => i + 1),
    patchPath: '/records/{id}',
    patchBody: (value) => ({ value }),
    batchBody: (ids, value) => ({ ids, value }),
    createBody: {},
  };
}

/**
 * Patches every record once, one by one, before each patch scenario: a record's first patch
 * instantiates its Durable Object (under wrangler dev several times the cost of a warm call)
 * and lets it learn the record's state, as the object of any record in use has, and the Worker
 * remember its facts (which it forgets after 30 s). The baseline gets the same pass.
 */
export async function warmUp(target: Target): Promise<void> {
  for (let i = 0; i < target.ids.length; i += 16) {
    await Promise.all(
      target.ids
        .slice(i, i + 16)
        .map((id) =>
          json(
            `${target.url}${target.patchPath.replace('{id}', String(id))}`,
            'PATCH',
            target.headers,
            target.patchBody(0),
          ),
        ),
    );
  }
}

/** New records of the service whose objects nobody used yet. */
export async function freshRecords(t: Target, count: number): Promise<number[]> {
  const ids: number[] = [];
  while (ids.length < count)
    ids.push(
      ...(await json(`${t.url}/records/batch`, 'POST', t.headers, t.createBody)).map(
        (item: any) => item.record.id as number,
      ),
    );
  return ids;
}
