import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { stubNamed } from '../../src/write/record-turns.ts';

/** Records how the namespace was asked for an object; the real namespace answers. */
function recording(hint: string) {
  const seen: unknown[] = [];
  const namespace = new Proxy(env.RECORDS, {
    get(target, prop) {
      if (prop === 'get')
        return (id: DurableObjectId, options?: unknown) => (seen.push(options), target.get(id, options as never));
      const value = Reflect.get(target, prop);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { env: { ...env, RECORDS: namespace, RECORD_OBJECT_LOCATION_HINT: hint }, seen };
}

describe('placing record objects near D1', () => {
  it('passes the configured locationHint, and none by default', () => {
    const hinted = recording('weur');
    stubNamed(hinted.env, '1');
    expect(hinted.seen).toEqual([{ locationHint: 'weur' }]);
    const plain = recording('');
    stubNamed(plain.env, '1');
    expect(plain.seen).toEqual([undefined]);
  });

  it('addresses one object per record id', () => {
    expect(env.RECORDS.idFromName('7').equals(env.RECORDS.idFromName('7'))).toBe(true);
    expect(stubNamed(env, '7').id.equals(env.RECORDS.idFromName('7'))).toBe(true);
  });
});
