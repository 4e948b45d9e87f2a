import { describe, expect, it } from 'vitest';
import type { ObjectDef } from '../../src/domain/definition.ts';
import { recordName, renderTemplate } from '../../src/domain/name.ts';

const def = (nameTemplate?: string): ObjectDef => ({
  id: 1,
  version: 1,
  name: 'Contact',
  workspaceIds: [1],
  fields: [],
  ...(nameTemplate === undefined ? {} : { nameTemplate }),
});
const values = (entries: Record<string, unknown>) =>
  Object.entries(entries).map(([fieldName, value]) => ({ fieldName, value }));

describe('record names', () => {
  it('replaces every placeholder with its value as text, trimmed', () => {
    expect(
      renderTemplate(def('  {first} {last} ({age}, {vip}) '), values({ first: 'Ada', last: 'L', age: 36, vip: true })),
    ).toBe('Ada L (36, true)');
  });
  it('joins arrays with ", ", renders objects as JSON and missing values as empty', () => {
    expect(
      renderTemplate(
        def('{tags}|{meta}|{missing}|{first}{first}'),
        values({ tags: ['a', 'b'], meta: { k: 1 }, first: 'x' }),
      ),
    ).toBe('a, b|{"k":1}||xx');
  });
  it('falls back to "<object name> #<id>" without a template or when it renders empty', () => {
    expect(recordName(def(), [], 42)).toBe('Contact #42');
    expect(recordName(def('  {missing} '), [], 7)).toBe('Contact #7');
    expect(recordName(def('{a}'), values({ a: 'Named' }), 7)).toBe('Named');
  });
  it('cuts at 10000 characters (code points, never half a pair)', () => {
    const name = renderTemplate(def('{a}'), values({ a: '😀'.repeat(10_001) }));
    expect(Array.from(name ?? '')).toHaveLength(10_000);
    expect(name?.endsWith('😀')).toBe(true);
    expect(renderTemplate(def('{a}'), values({ a: 'x'.repeat(10_000) }))).toHaveLength(10_000);
  });
});
