import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { CALL_MEMORY_BYTES } from '../../src/record-object.ts';
import { call, CONTACT_FIELDS, createOne, newObject, newUser, newWorkspace } from './helpers.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
/** runInDurableObject, typed loosely: the record object's RPC types are too deep for the checker. */
const inObject = runInDurableObject as unknown as <T>(stub: unknown, run: (instance: any) => T) => Promise<T>;

describe('a record object remembers its answered calls within a byte bound', () => {
  it(
    'ten patches of a record near 1 MiB: the remembered answers stay within the bound, the record is ' + 'right',
    async () => {
      const editor = await newUser();
      const ws = await newWorkspace({ [editor.id]: 'editor' });
      const object = await newObject([ws], { fields: [...CONTACT_FIELDS, { name: 'blob', type: 'json' }] });
      const record = await createOne(editor.key, object.id, [fv('firstName', 'big')]);
      const big = 'b'.repeat(900_000);
      for (let i = 0; i < 10; i++) {
        const res = await call('PATCH', `/workspaces/${ws}/records/${record.id}`, {
          key: editor.key,
          body: { fieldValues: [fv('blob', [i, big])] },
        });
        expect(res.body.version).toBe(i + 2);
      }
      const stub = env.RECORDS.get(env.RECORDS.idFromName(String(record.id)));
      const held = await inObject(stub, (instance) => ({ bytes: instance.answers.bytes, size: instance.answers.size }));
      expect(held.bytes).toBeLessThanOrEqual(CALL_MEMORY_BYTES);
      // Each answer is about 0.9 MB of UTF-8: ten would not fit, the newest do.
      expect(held.size).toBeGreaterThan(0);
      expect(held.size).toBeLessThan(10);
      const read = await call('GET', `/records/${record.id}`, { key: editor.key });
      expect([read.body.version, read.body.fieldValues[1].value[0]]).toEqual([11, 9]);
    },
  );
});
