import { describe, expect, it } from 'vitest';
import { historyItems, type HistoryRow } from '../../src/domain/history.ts';
import { changeRetention } from '../../src/domain/retention.ts';

const DAY = 24 * 60 * 60 * 1000;
const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const record = (version: number, fieldValues: unknown[]) => ({ id: 7, version, name: 'Ada', fieldValues });
const row = (version: number, type: HistoryRow['type'], data: unknown, was: unknown = null): HistoryRow => ({
  version,
  type,
  at: 1000 * version,
  by: version,
  data: JSON.stringify(data),
  was: was === null ? null : JSON.stringify(was),
});

describe('historyItems', () => {
  it("shows a creation's values from null, a diff's fields from their previous to their new value", () => {
    const rows = [
      row(3, 'deleted', { prevAt: 2000, prevBy: 2 }),
      row(2, 'updated', {
        set: [fv('b', 'y'), fv('a', null)],
        was: [fv('b', 'x'), fv('a', 1)],
        prevAt: 1000,
        prevBy: 1,
      }),
      row(1, 'created', record(1, [fv('a', 1), fv('b', 'x')])),
    ];
    expect(historyItems(rows)).toEqual([
      { version: 3, at: 3000, by: 3, type: 'deleted', changes: [] },
      {
        version: 2,
        at: 2000,
        by: 2,
        type: 'updated',
        changes: [
          { fieldName: 'b', from: 'x', to: 'y' },
          { fieldName: 'a', from: 1, to: null },
        ],
      },
      { version: 1, at: 1000, by: 1, type: 'created', changes: [fv('a', 1), fv('b', 'x')].map(created) },
    ]);
  });

  it('reads previous values kept apart from a large diff', () => {
    const big = 'x'.repeat(10);
    const rows = [row(2, 'updated', { set: [fv('a', big)], prevAt: 1, prevBy: 1 }, [fv('a', 'small')])];
    expect(historyItems(rows)[0]?.changes).toEqual([{ fieldName: 'a', from: 'small', to: big }]);
  });

  it('compares a change kept whole (before diffs) with the one before it, or with nothing when that is gone', () => {
    const whole = row(3, 'updated', { record: record(3, [fv('a', 2), fv('c', true)]) });
    const before = row(2, 'updated', { record: record(2, [fv('a', 1), fv('b', 'x')]) });
    expect(historyItems([whole], before)[0]?.changes).toEqual([
      { fieldName: 'a', from: 1, to: 2 },
      { fieldName: 'c', from: null, to: true },
      { fieldName: 'b', from: 'x', to: null },
    ]);
    expect(historyItems([whole])[0]?.changes).toEqual([
      { fieldName: 'a', from: null, to: 2 },
      { fieldName: 'c', from: null, to: true },
    ]);
  });
});

const created = ({ fieldName, value }: { fieldName: string; value: unknown }) => ({ fieldName, from: null, to: value });

describe('changeRetention', () => {
  it('keeps 7 days unless set longer; a shorter setting keeps 7; text that is no number keeps 7 and says so', () => {
    expect(changeRetention(undefined)).toEqual({ ms: 7 * DAY, valid: true });
    expect(changeRetention('')).toEqual({ ms: 7 * DAY, valid: true });
    expect(changeRetention('30')).toEqual({ ms: 30 * DAY, valid: true });
    expect(changeRetention(' 90 ')).toEqual({ ms: 90 * DAY, valid: true });
    expect(changeRetention('3')).toEqual({ ms: 7 * DAY, valid: true });
    expect(changeRetention('30d')).toEqual({ ms: 7 * DAY, valid: false });
    expect(changeRetention('-1')).toEqual({ ms: 7 * DAY, valid: false });
  });
});
