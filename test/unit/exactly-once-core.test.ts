import { describe, expect, it } from 'vitest';
import { canonicalJson, nesting, unstorableJson } from '../../src/core/json.ts';
import type { NewRecord } from '../../src/domain/create.ts';
import { sameValues } from '../../src/domain/field-values.ts';
import { renderTemplate } from '../../src/domain/name.ts';
import { applyDeletion, applySequence } from '../../src/domain/patch.ts';
import { assemble, createdRecord, createdRecordTemplate } from '../../src/domain/record-json.ts';
import { Expiring } from '../../src/storage/isolate-cache.ts';
import { packTuples } from '../../src/storage/writes.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

describe('what JSON.parse lets through but storage would alter', () => {
  it('finds non-finite numbers and lone surrogates in values and keys, with pointers', () => {
    expect(unstorableJson({ a: [1, Infinity], 'b/c': '\ud800', ok: '\ud83d\ude00' })).toEqual([
      { pointer: '/a/1', code: 'invalid_number', message: 'number out of range' },
      { pointer: '/b~1c', code: 'invalid_string', message: 'string holds a lone surrogate' },
    ]);
    expect(unstorableJson({ ['\udc00']: 1 })[0]).toMatchObject({ pointer: '/\udc00', code: 'invalid_string' });
    expect(unstorableJson(JSON.parse('['.repeat(5000) + ']'.repeat(5000)))).toEqual([]);
  });
  it('measures nesting without recursion', () => {
    expect([nesting(1), nesting([]), nesting({ a: [{}] })]).toEqual([0, 1, 3]);
    expect(nesting(JSON.parse('['.repeat(100_000) + ']'.repeat(100_000)))).toBe(100_000);
  });
  it('canonical JSON ignores key order and white space, not array order', () => {
    expect(canonicalJson(JSON.parse('{ "b": 1, "a": {"y": 2, "x": [3, 1]} }'))).toBe('{"a":{"x":[3,1],"y":2},"b":1}');
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });
});

describe('a created record serializes the same whether built here or assembled by storage', () => {
  const base: NewRecord = {
    objectId: 3,
    objectVersion: 2,
    name: undefined,
    objectName: 'Deal "big"',
    fieldValues: [fv('x', '\u0000€')],
    sharedWorkspaceIds: [1, 4],
    userId: 9,
    now: 1000,
    isTemplate: false,
    creationType: 'User',
  };
  it('with the fallback name, which holds the id', () => {
    const t = createdRecordTemplate(base);
    expect(assemble(t, 12345)).toBe(JSON.stringify(createdRecord(base, 12345)));
    expect(JSON.parse(assemble(t, 7)).name).toBe('Deal "big" #7');
  });
  it('with a rendered name', () => {
    const named = { ...base, name: 'Zed \\ "q"' };
    expect(assemble(createdRecordTemplate(named), 8)).toBe(JSON.stringify(createdRecord(named, 8)));
  });
});

describe('names and values', () => {
  it(
    'trims U+0000 and white space at either end of a rendered name (a leading U+0000 reads as empty to ' + 'SQLite)',
    () => {
      const def = { id: 1, version: 1, name: 'C', workspaceIds: [1], nameTemplate: '{a} {b}', fields: [] };
      expect(renderTemplate(def, [fv('a', '\u0000 x'), fv('b', 'y\u0000')])).toBe('x y');
      expect(renderTemplate(def, [fv('a', '\u0000')])).toBeUndefined();
    },
  );
  it('compares values by field name, not position', () => {
    expect(sameValues([fv('a', 1), fv('b', [1])], [fv('b', [1]), fv('a', 1)])).toBe(true);
    expect(sameValues([fv('a', 1)], [fv('a', 2)])).toBe(false);
    expect(sameValues([fv('a', 1)], [fv('a', 1), fv('b', 1)])).toBe(false);
  });
});

describe("delete and restore in a record's sequence", () => {
  const record = {
    id: 1,
    objectId: 1,
    objectVersion: 1,
    name: 'n',
    fieldValues: [],
    creationType: 'User' as const,
    version: 4,
    deleted: false,
    sharedWorkspaceIds: [1],
    ownedBy: 1,
    createdAt: 1,
    createdBy: 1,
    updatedAt: 5,
    updatedBy: 1,
    isTemplate: false,
  };
  const def = { id: 1, version: 1, name: 'C', workspaceIds: [1], fields: [{ name: 'a', type: 'text' as const }] };
  it(
    'a delete raises the version; a second delete changes nothing; a patch after it is 409; a restore ' +
      'brings it back',
    () => {
      const { final, outcomes } = applySequence(
        record,
        [
          { def, patch: {}, userId: 2, action: 'delete' },
          { def, patch: {}, userId: 2, action: 'delete' },
          { def, patch: { fieldValues: [fv('a', 'x')] }, userId: 2 },
          { def, patch: {}, userId: 3, action: 'restore' },
        ],
        10,
      );
      expect(outcomes.map((o) => (o.ok ? [o.record.version, o.change ?? 'none'] : o.status))).toEqual([
        [5, 'deleted'],
        [5, 'none'],
        409,
        [6, 'restored'],
      ]);
      expect(final).toMatchObject({ version: 6, deleted: false, updatedBy: 3, updatedAt: 10 });
      expect(applyDeletion(record, false, 9, 99)).toBe(record);
    },
  );
});

describe('isolate memory is bounded from when a read was issued', () => {
  it('an entry expires ttl after its read was issued, and an older read never replaces a newer one', () => {
    let now = 1000;
    const memory = new Expiring<string, string>(30_000, 10, () => now);
    memory.set('k', 'newer', { at: 1000, seq: 2 });
    memory.set('k', 'older', { at: 500, seq: 1 }); // a read issued earlier that came back later
    expect(memory.get('k')).toBe('newer');
    memory.set('j', 'slow', { at: 100, seq: 0 }); // issued at 100, stored at 1000
    now = 30_100;
    expect(memory.get('j')).toBeUndefined();
    expect(memory.get('k')).toBe('newer');
    now = 31_000;
    expect(memory.get('k')).toBeUndefined();
  });
});

describe("packing a batch's tuples into statements", () => {
  it('keeps the order, stays within the bound, and leaves a longer tuple alone', () => {
    const t = (n: number) => JSON.stringify(['x'.repeat(n)]); // n + 4 characters
    expect(packTuples([], 100)).toEqual([]);
    expect(packTuples([t(10), t(20)], 100)).toEqual([`[${t(10)},${t(20)}]`]);
    // 2 + 54 + 1 + 44 = 101 > 100: a second array; 200 characters alone.
    expect(packTuples([t(50), t(40), t(196), t(1)], 100)).toEqual([`[${t(50)}]`, `[${t(40)}]`, 2, `[${t(1)}]`]);
    const many = Array.from({ length: 50 }, (_, i) => t(i));
    const packed = packTuples(many, 120);
    expect(packed.every((p) => typeof p === 'string' && p.length <= 120)).toBe(true);
    expect(packed.flatMap((p) => JSON.parse(p as string))).toEqual(many.map((m) => JSON.parse(m)));
  });
});
