import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/json.ts';
import { signCursor } from '../../src/http/cursor.ts';
import { readOrMakeCursorKey } from '../../src/storage/cursor-key.ts';
import { Meter } from '../../src/storage/meter.ts';
import { ADMIN_TOKEN, call, countRows, createOne, expectProblem, world } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const b64url = (text: string) => btoa(text).replaceAll('+', '-').replaceAll('/', '_').replaceAll('=', '');
const storedKey = async () =>
  (await env.DB.prepare('SELECT secret FROM cursor_key').first<{ secret: string }>())?.secret;

describe('cursors are signed with a key of their own, and only their exact text is accepted', () => {
  it('the stored key is made once, whoever races to make it', async () => {
    expect(await countRows('cursor_key')).toBe(0);
    const keys = await Promise.all(Array.from({ length: 20 }, () => readOrMakeCursorKey(env.DB, new Meter())));
    expect(new Set(keys).size).toBe(1);
    expect(await countRows('cursor_key')).toBe(1);
    expect(await storedKey()).toBe(keys[0]);
    expect(keys[0]).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it(
    'without CURSOR_SECRET, list and feed cursors are signed with the stored random key, not ' +
      'ADMIN_TOKEN nor a fixed key',
    async () => {
      const { editor, workspaceId, object } = await world();
      const first = await createOne(editor.key, object.id, [fv('firstName', 'A')]);
      await createOne(editor.key, object.id, [fv('firstName', 'B')]);
      const page = await call('GET', `/workspaces/${workspaceId}/records?limit=1`, { key: editor.key });
      const scope = `records/${workspaceId}/${canonicalJson({ deleted: 'exclude', fields: [] })}`;
      const key = (await storedKey()) as string;
      expect(page.body.nextCursor).toBe(await signCursor(key, first.id, scope));
      for (const wrong of [ADMIN_TOKEN, 'record-service-local-cursor-key']) {
        expect(page.body.nextCursor).not.toBe(await signCursor(wrong, first.id, scope));
      }
      const feed = await call('GET', `/workspaces/${workspaceId}/changes?limit=1`, { key: editor.key });
      expect(feed.body.nextCursor.split('.')[1]).toBe(
        (await signCursor(key, Number(atob(feed.body.nextCursor.split('.')[0])), `changes/${workspaceId}`)).split(
          '.',
        )[1],
      );
      // A cursor signed with ADMIN_TOKEN, as they were before, is refused.
      const forged = await call(
        'GET',
        `/workspaces/${workspaceId}/records?limit=1&cursor=${await signCursor(ADMIN_TOKEN, first.id, scope)}`,
        { key: editor.key },
      );
      expectProblem(forged, 400, 'invalid_request');
    },
  );

  it(
    'any change to a cursor\'s text is 400 naming the parameter: 01, " 1", 1.0, +1, an edited last ' + 'character',
    async () => {
      const { editor, workspaceId, object } = await world();
      const records = [];
      for (const name of ['A', 'B', 'C']) records.push(await createOne(editor.key, object.id, [fv('firstName', name)]));
      const page = await call('GET', `/workspaces/${workspaceId}/records?limit=1`, { key: editor.key });
      const cursor: string = page.body.nextCursor;
      const [head, tag] = cursor.split('.') as [string, string];
      expect(atob(head)).toBe(String(records[0].id));
      const edits = [
        ...['0', ' ', '+'].map((prefix) => `${b64url(prefix + atob(head))}.${tag}`),
        `${b64url(atob(head) + '.0')}.${tag}`,
        ...[...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_']
          .filter((c) => c !== cursor.at(-1))
          .map((c) => cursor.slice(0, -1) + c),
      ];
      for (const edited of edits) {
        const res = await call(
          'GET',
          `/workspaces/${workspaceId}/records?limit=1&cursor=${encodeURIComponent(edited)}`,
          {
            key: editor.key,
          },
        );
        expectProblem(res, 400, 'invalid_request');
        expect(res.body.errors, edited).toEqual([
          { query: 'cursor', code: 'invalid_cursor', message: 'not a cursor this service issued for this query' },
        ]);
      }
      const next = await call('GET', `/workspaces/${workspaceId}/records?limit=1&cursor=${cursor}`, {
        key: editor.key,
      });
      expect(next.body.items.map((r: any) => r.id)).toEqual([records[1].id]);

      const feed = await call('GET', `/workspaces/${workspaceId}/changes?limit=1`, { key: editor.key });
      const after: string = feed.body.nextCursor;
      for (const edited of [
        `${b64url('0' + atob(after.split('.')[0] as string))}.${after.split('.')[1]}`,
        after.slice(0, -1) + (after.endsWith('A') ? 'B' : 'A'),
      ]) {
        const res = await call('GET', `/workspaces/${workspaceId}/changes?after=${encodeURIComponent(edited)}`, {
          key: editor.key,
        });
        expectProblem(res, 400, 'invalid_request');
        expect(res.body.errors).toEqual([
          { query: 'after', code: 'invalid_cursor', message: 'not a cursor this service issued for this query' },
        ]);
      }
    },
  );

  it('the stored key costs one round trip per isolate, not one per page', async () => {
    const { editor, workspaceId } = await world();
    const trips = async () => {
      const res = await call('GET', `/workspaces/${workspaceId}/records`, { key: editor.key });
      return Number(/"(\d+) round trip/.exec(res.headers.get('Server-Timing') ?? '')?.[1]);
    };
    await trips();
    expect(await trips()).toBe(await trips());
    expect(await trips()).toBe(1);
  });
});
