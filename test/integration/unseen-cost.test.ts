import { describe, expect, it } from 'vitest';
import { env } from 'cloudflare:workers';
import { call, createOne, newWorkspace, world, type Answer } from './helpers.ts';

/**
 * A write to a record the caller cannot see costs what a write to an id never issued costs:
 * the same status and body, the same D1 round trips, no call to any object, whether or not
 * someone else used the record lately (this isolate remembers it then), and no count of the rows
 * D1 read (reading a row that exists costs more rows than finding none).
 */

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const TIMING = /d1;dur=[\d.]+;desc="(\d+) round trips?", do;dur=[\d.]+;desc="(\d+) calls?"/;

function cost(answer: Answer) {
  const match = TIMING.exec(answer.headers.get('Server-Timing') ?? '');
  if (match === null) throw new Error(`bad Server-Timing: ${answer.headers.get('Server-Timing')}`);
  // The rows D1 read differ (an existing row is read): a 404 does not tell them.
  const rows = /rows;/.test(answer.headers.get('Server-Timing') ?? '');
  return { status: answer.status, body: answer.body, d1: Number(match[1]), calls: Number(match[2]), rows };
}

const NEVER_ISSUED = 900_000_000;

describe('a record the caller cannot see costs what a missing one costs', () => {
  it(
    'PATCH, DELETE and restore, with and without a key, on a record others just used and on an id never' + ' issued',
    async () => {
      const { editor, stranger, workspaceId, object } = await world();
      const own = await newWorkspace({ [stranger.id]: 'editor' });
      const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
      const writes = (id: number, ws: number, key?: string) => {
        const headers = key === undefined ? {} : { 'Idempotency-Key': key };
        return [
          () =>
            call('PATCH', `/workspaces/${ws}/records/${id}`, {
              key: stranger.key,
              body: { fieldValues: [fv('firstName', 'Eve')] },
              headers,
            }),
          () => call('DELETE', `/workspaces/${ws}/records/${id}`, { key: stranger.key, headers }),
          () => call('POST', `/workspaces/${ws}/records/${id}/restore`, { key: stranger.key, headers }),
        ];
      };
      const changes = (await env.DB.prepare('SELECT max(seq) AS seq FROM changes').first<{ seq: number }>())?.seq ?? 0;
      let n = 0;
      for (const ws of [own, workspaceId]) {
        for (const keyed of [false, true]) {
          const key = () => (keyed ? `k-${n++}` : undefined);
          // Someone who sees the record uses it now: this isolate remembers it.
          await call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
            key: editor.key,
            body: { fieldValues: [fv('age', n)] },
          });
          const unseen = [];
          for (const write of writes(record.id, ws, key())) unseen.push(cost(await write()));
          const missing = [];
          for (const write of writes(NEVER_ISSUED, ws, key())) missing.push(cost(await write()));
          expect(unseen).toEqual(missing);
          for (const answer of unseen) {
            expect(answer.status).toBe(404);
            expect(answer.calls).toBe(0);
            expect(answer.rows).toBe(false);
          }
        }
      }
      // Nothing the stranger sent was written: only the editor's patches.
      const by = await env.DB.prepare('SELECT by FROM changes WHERE seq > ?').bind(changes).all<{ by: number }>();
      expect(new Set(by.results.map((row) => row.by))).toEqual(new Set([editor.id]));
      const read = await call('GET', `/records/${record.id}`, { key: editor.key });
      expect([read.body.deleted, read.body.fieldValues[0]]).toEqual([false, fv('firstName', 'Ada')]);
    },
  );
});
