/** The fewest days the change feed (and so a record's history) keeps a change: cursors rely on it. */
export const MIN_RETENTION_DAYS = 7;

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * How long changes are kept, from the `CHANGE_RETENTION_DAYS` var: a whole number of days, at
 * least MIN_RETENTION_DAYS (a smaller one counts as that). Unset or empty: MIN_RETENTION_DAYS.
 * `valid` is false for any other text, which keeps the default.
 */
export function changeRetention(setting: string | undefined): { ms: number; valid: boolean } {
  if (setting === undefined || setting.trim() === '') return { ms: MIN_RETENTION_DAYS * DAY_MS, valid: true };
  const days = /^\s*[0-9]{1,6}\s*$/.test(setting) ? Number(setting) : undefined;
  if (days === undefined) return { ms: MIN_RETENTION_DAYS * DAY_MS, valid: false };
  return { ms: Math.max(days, MIN_RETENTION_DAYS) * DAY_MS, valid: true };
}
