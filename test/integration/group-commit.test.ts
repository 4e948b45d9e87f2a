import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { call, createOne, world } from './helpers.ts';

describe('group commit for hot records', () => {
  it(
    'merges patches queued behind one object into fewer guarded writes, each answered with its own ' + 'version',
    async () => {
      const { editor, workspaceId, object } = await world();
      const record = await createOne(editor.key, object.id, [{ fieldName: 'firstName', value: 'hot' }]);
      // Test-only: log every write D1 applies to records.
      await env.DB.exec('CREATE TABLE write_log (record_id INTEGER, version INTEGER)');
      await env.DB.exec(
        'CREATE TRIGGER log_writes AFTER UPDATE ON records ' +
          'BEGIN INSERT INTO write_log VALUES (NEW.id, NEW.version); END',
      );
      const N = 120;
      const answers = await Promise.all(
        Array.from({ length: N }, (_, i) =>
          call('PATCH', `/workspaces/${workspaceId}/records/${record.id}`, {
            key: editor.key,
            body: { fieldValues: [{ fieldName: 'age', value: i }] },
          }),
        ),
      );
      expect(answers.map((a) => a.body.version).sort((a, b) => a - b)).toEqual(
        Array.from({ length: N }, (_, i) => i + 2),
      );
      const writes = (
        await env.DB.prepare('SELECT version FROM write_log WHERE record_id = ? ORDER BY version')
          .bind(record.id)
          .all<{ version: number }>()
      ).results;
      expect(writes.length).toBeGreaterThan(0);
      expect(writes.length).toBeLessThan(N / 2);
      expect(writes.at(-1)?.version).toBe(N + 1);
      // The stored record is the state the highest answered version described.
      const last = answers.find((a) => a.body.version === N + 1);
      expect((await call('GET', `/records/${record.id}`, { key: editor.key })).body).toEqual(last?.body);
      await env.DB.exec('DROP TRIGGER log_writes');
    },
  );
});
