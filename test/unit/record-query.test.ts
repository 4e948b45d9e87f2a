import { describe, expect, it } from 'vitest';
import { catalogOf, opsFor, parseQuery, project, relevanceOf, searchKey, searchWords } from '../../src/domain/query.ts';
import type { ObjectDef } from '../../src/domain/object-def.ts';

const def = (id: number, fields: ObjectDef['fields']): ObjectDef => ({
  id,
  version: 1,
  name: 'O',
  workspaceIds: [1],
  fields,
});
const catalog = catalogOf([
  def(1, [
    { name: 'title', type: 'text' },
    { name: 'rank', type: 'integer', indexed: true },
    { name: 'tags', type: 'multiSelect', options: ['a'] },
  ]),
  def(2, [
    { name: 'rank', type: 'integer' },
    { name: 'kind', type: 'text' },
  ]),
  def(3, [{ name: 'kind', type: 'number' }]),
]);

describe('the query domain', () => {
  it('types fields across objects: indexed only where every object indexes it; a type conflict is ambiguous', () => {
    expect(catalog.get('rank')).toEqual({ type: 'integer', indexed: false, ready: false });
    expect(catalog.get('kind')).toBe('conflict');
    expect(catalog.get('title')).toEqual({ type: 'text', indexed: false, ready: false });
  });

  it('keeps a field whose index is still being built sortable, but not ready to be read from the index', () => {
    const defs = [
      def(1, [{ name: 'rank', type: 'integer', indexed: true }]),
      def(2, [{ name: 'rank', type: 'integer', indexed: true }]),
    ];
    expect(catalogOf(defs).get('rank')).toEqual({ type: 'integer', indexed: true, ready: true });
    expect(catalogOf(defs, new Map([[2, ['rank']]])).get('rank')).toEqual({
      type: 'integer',
      indexed: true,
      ready: false,
    });
    expect(catalogOf(defs, new Map([[2, ['other']]])).get('rank')).toEqual({
      type: 'integer',
      indexed: true,
      ready: true,
    });
    const sorted = parseQuery({ sort: [{ field: 'rank' }] }, catalogOf(defs, new Map([[1, ['rank']]])));
    expect(sorted.ok && sorted.value.sort[0]?.field).toEqual({
      kind: 'value',
      name: 'rank',
      type: 'integer',
      indexed: true,
      ready: false,
    });
  });

  it('gives each type its operators', () => {
    expect(opsFor('text', undefined)).toEqual([
      'exists',
      'eq',
      'ne',
      'in',
      'nin',
      'lt',
      'lte',
      'gt',
      'gte',
      'contains',
      'startsWith',
    ]);
    expect(opsFor('multiSelect', undefined)).toEqual(['exists', 'contains']);
    expect(opsFor('json', undefined)).toEqual(['exists']);
    expect(opsFor('boolean', undefined)).toEqual(['exists', 'eq', 'ne', 'in', 'nin']);
    expect(opsFor('email', undefined)).toEqual(['exists', 'eq', 'ne', 'in', 'nin', 'startsWith']);
    // The system field `name` takes every operator a text field does.
    expect(opsFor('text', 'name')).toEqual(opsFor('text', undefined));
  });

  it('parses a valid query: defaults, the id tie-break, deleted named or not', () => {
    const parsed = parseQuery({ filter: { field: 'title', op: 'eq', value: 'x' } }, catalog);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value.limit).toBe(50);
    expect(parsed.value.count).toBe(false);
    expect(parsed.value.namesDeleted).toBe(false);
    expect(parsed.value.sort.map((key) => [key.field.name, key.direction])).toEqual([['id', 'asc']]);
    const deleted = parseQuery({ filter: { or: [{ field: 'deleted', op: 'eq', value: true }] } }, catalog);
    expect(deleted.ok && deleted.value.namesDeleted).toBe(true);
  });

  it('lists every problem with its pointer', () => {
    const parsed = parseQuery(
      {
        filter: { and: [{ field: 'kind', op: 'eq', value: 1 }, { field: 'tags', op: 'eq', value: 'a' }, { foo: 1 }] },
        sort: [{ field: 'title' }, { field: 'rank' }],
        search: 'x',
        count: 'yes',
      },
      catalog,
    );
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.problems.map((p) => [p.pointer, p.code])).toEqual([
      ['/filter/and/0/field', 'ambiguous_field'],
      ['/filter/and/1/op', 'invalid_operator'],
      ['/filter/and/2/foo', 'unknown_property'],
      ['/filter/and/2', 'invalid_type'],
      ['/sort/0/field', 'not_sortable'],
      ['/sort/1/field', 'not_sortable'],
      ['/count', 'invalid_type'],
    ]);
  });

  it('projects field values', () => {
    const record = {
      id: 1,
      fieldValues: [
        { fieldName: 'a', value: 1 },
        { fieldName: 'b', value: 2 },
      ],
    };
    expect(project(record, ['b'])).toEqual({ id: 1, fieldValues: [{ fieldName: 'b', value: 2 }] });
    expect(project(record)).toBe(record);
  });

  it('searches words by prefix, without case or accents, in any script', () => {
    expect(searchWords('Zoë  Ångström-Smith, 東京')).toEqual(['zoe', 'angstrom', 'smith', '東京']);
    expect(searchKey('  Zoë  Ångström-Smith, 東京 ')).toBe('zoe angstrom smith 東京');
    expect(relevanceOf('Zoë Ångström', searchWords('ANG zo'))).toBe(2);
    expect(relevanceOf('Zoë Ångström', searchWords('ström'))).toBeUndefined();
    expect(relevanceOf('anything', [])).toBe(1);
  });

  it('is blind to case where lower case alone is not: a final sigma, a sharp s', () => {
    // The capitals of a name's start are a prefix of it, whatever place a sigma has in either.
    expect(relevanceOf('ΣΟΦΟΣΤΗΣ', searchWords('ΣΟΦΟΣ'))).toBe(2);
    expect(relevanceOf('Σοφός', searchWords('ΣΟΦΟΣ'))).toBe(0);
    expect(relevanceOf('Straße', searchWords('STRASSE'))).toBe(0);
    expect(relevanceOf('STRASSE', searchWords('straß'))).toBe(2);
    expect(relevanceOf('Hauptstraße 5', searchWords('HAUPTSTRASSE'))).toBe(1);
    expect(searchKey('ẞ Σ')).toBe('ss σ');
  });

  it('ranks a match: the exact name, whole words, any prefix', () => {
    const words = searchWords('Acme');
    expect(['ÁCME', 'Zed acme', 'Acmeville', 'Big Acmeco', 'Other'].map((n) => relevanceOf(n, words))).toEqual([
      0,
      1,
      2,
      2,
      undefined,
    ]);
    expect(relevanceOf('Acme Corp', searchWords('corp acme'))).toBe(1);
  });

  it('takes a search without a sort by relevance; with a sort, or with a count, as asked', () => {
    const parsed = (body: unknown) => {
      const result = parseQuery(body, catalog);
      if (!result.ok) throw new Error(JSON.stringify(result.problems));
      return result.value;
    };
    expect(parsed({ search: 'acme' }).relevance).toBe(true);
    expect(parsed({ search: ' ,; ' }).relevance).toBe(false);
    expect(parsed({ search: 'acme', sort: [{ field: 'name' }] })).toMatchObject({ relevance: false });
    expect(parsed({ search: 'acme', count: true })).toMatchObject({ relevance: true, count: true });
    expect(parsed({}).relevance).toBe(false);
  });
});
