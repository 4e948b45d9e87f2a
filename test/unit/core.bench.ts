/**
 * `npm run bench:core`: the pure core's share of a 20-record batch, in plain Node — the body
 * checked against the schemas, every element validated against the definition, merged and its
 * name rendered. Target: under 200 µs per batch.
 */
import { bench, describe } from 'vitest';
import { NO_LIMITS, type Access, type Caller } from '../../src/domain/access.ts';
import { planCreate } from '../../src/domain/create.ts';
import type { ObjectDef } from '../../src/domain/definition.ts';
import { withFormulas } from '../../src/domain/formula-values.ts';
import { applyPatch, patchProblems } from '../../src/domain/patch.ts';
import { duplicateProblems, fieldValueDuplicates, parseBatch, pointer } from '../../src/schemas/parse.ts';
import { CreateItem, PatchItem, type RecordOut } from '../../src/schemas/record.ts';

const EVERYTHING: Access = { read: true, update: true, delete: true, fields: NO_LIMITS };

const def: ObjectDef = {
  id: 1,
  version: 1,
  name: 'Contact',
  nameTemplate: '{firstName} {lastName} ({stage})',
  workspaceIds: [1],
  fields: [
    { name: 'firstName', type: 'text', required: true },
    { name: 'lastName', type: 'text' },
    { name: 'email', type: 'email' },
    { name: 'stage', type: 'select', options: ['lead', 'customer', 'lost'] },
    { name: 'tags', type: 'multiSelect', options: ['a', 'b', 'c', 'd'] },
    { name: 'score', type: 'integer' },
    { name: 'born', type: 'date' },
    { name: 'seen', type: 'datetime' },
    { name: 'site', type: 'url' },
    { name: 'extra', type: 'json' },
  ],
};
const objects = new Map([[def.id, def]]);
const caller: Caller = { userId: 7, roles: new Map([[1, 'editor']]) };
const fv = (fieldName: string, value: unknown) => ({ fieldName, value });

const values = (i: number) => [
  fv('firstName', `First${i}`),
  fv('lastName', `Last${i}`),
  fv('email', `person${i}@example.com`),
  fv('stage', 'lead'),
  fv('tags', ['a', 'c']),
  fv('score', i),
  fv('born', '1990-02-28'),
  fv('seen', '2026-11-22T10:00:00Z'),
  fv('site', 'https://example.com/people'),
  fv('extra', { nested: [1, 2, 3] }),
];

// As the body arrives: parsed JSON, not yet trusted.
const createBody: unknown = JSON.parse(
  JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ objectId: 1, fieldValues: values(i) }))),
);
const patchBody: unknown = JSON.parse(
  JSON.stringify(
    Array.from({ length: 20 }, (_, i) => ({
      id: i,
      fieldValues: [fv('stage', 'customer'), fv('score', i + 1), fv('lastName', null)],
    })),
  ),
);
const stored: RecordOut[] = Array.from({ length: 20 }, (_, i) => ({
  id: i,
  objectId: 1,
  objectVersion: 1,
  name: `First${i} Last${i} (lead)`,
  fieldValues: values(i),
  creationType: 'User',
  version: 3,
  deleted: false,
  sharedWorkspaceIds: [1],
  ownedBy: 7,
  createdAt: 1,
  createdBy: 7,
  updatedAt: 1,
  updatedBy: 7,
  isTemplate: false,
}));

const createDuplicates = (items: readonly unknown[]) =>
  items.flatMap((item, i) => fieldValueDuplicates(item, pointer('', i)));
const patchDuplicates = (items: readonly unknown[]) => [
  ...duplicateProblems(items, 'id', ''),
  ...createDuplicates(items),
];

// The same object with five formulas: what a batch's records cost to compute (target: ≤ 100 µs).
const withFive: ObjectDef = {
  ...def,
  fields: [
    ...def.fields,
    { name: 'fullName', type: 'formula', expression: 'TRIM(firstName & " " & UPPER(lastName))', resultType: 'text' },
    {
      name: 'next',
      type: 'formula',
      expression: 'IF(stage = "lead", score * 2 + 1, ROUND(score / 3, 1))',
      resultType: 'number',
    },
    { name: 'renews', type: 'formula', expression: 'DATEADD(born, 18, "years")', resultType: 'date' },
    {
      name: 'fresh',
      type: 'formula',
      expression: 'DATEDIFF(seen, updatedAt, "days") < 30 AND NOT ISBLANK(email)',
      resultType: 'boolean',
    },
    { name: 'rank', type: 'formula', expression: 'COALESCE(next, 0) + LEN(fullName)', resultType: 'number' },
  ],
};
const computeInputs = stored.map((record) => record.fieldValues);

describe('pure core, one 20-record batch', () => {
  bench('formulas: five computed for each of 20 records', () => {
    for (const values of computeInputs) withFormulas(withFive, values, { createdAt: 1, updatedAt: 2 });
  });

  bench('create: parse + validate + render', () => {
    const parsed = parseBatch(CreateItem, createBody, createDuplicates);
    if (!parsed.ok) throw new Error('fixture should parse');
    const plan = planCreate(caller, parsed.value, objects, 1);
    if (!plan.ok) throw new Error('fixture should plan');
  });

  bench('patch: parse + validate + merge + render', () => {
    const parsed = parseBatch(PatchItem, patchBody, patchDuplicates);
    if (!parsed.ok) throw new Error('fixture should parse');
    parsed.value.forEach((item, i) => {
      const record = stored[item.id] as RecordOut;
      if (patchProblems(record, EVERYTHING, def, item, pointer('', i)).length > 0)
        throw new Error('fixture should validate');
      const applied = applyPatch(record, def, item, 7, 2, pointer('', i));
      if (!applied.ok || !applied.changed) throw new Error('fixture should change');
    });
  });
});
