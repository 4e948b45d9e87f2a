import { describe, expect, it } from 'vitest';
import { failedWith, problemsOf } from '../../src/core/ledger.ts';
import type { InputProblem } from '../../src/core/problem.ts';
import { rejected } from '../../src/http/errors.ts';

describe('a refusal kept in the ledger', () => {
  const cases: [string, InputProblem[]][] = [
    ['a deleted record in a batch', [{ pointer: '/0/id', code: 'record_deleted', message: 'deleted', status: 409 }]],
    [
      'several problems of several statuses',
      [
        { pointer: '/1/id', code: 'record_deleted', message: 'deleted', status: 409 },
        { pointer: '/0/fieldValues/0/value', code: 'invalid_value', message: 'expected text', status: 422 },
        { pointer: '/2/id', code: 'not_found', message: 'no such record', status: 404 },
      ],
    ],
    ['one unprocessable value', [{ pointer: '/fieldValues/0', code: 'invalid_value', message: 'expected text' }]],
  ];
  it.each(cases)('is answered again exactly as first answered: %s', (_, problems) => {
    const first = rejected(problems);
    const kept = JSON.parse(JSON.stringify(failedWith(first.status, first.errors ?? [])));
    const again = rejected(problemsOf(kept));
    expect({ ...again, stack: undefined }).toEqual({ ...first, stack: undefined });
    expect(again.status).toBe(first.status);
    expect(again.code).toBe(first.code);
  });
});
