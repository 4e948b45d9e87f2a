import { describe, expect, it } from 'vitest';
import { cursorKey, readCursor, readPosition, signCursor, signPosition } from '../../src/http/cursor.ts';

const b64url = (text: string) => btoa(text).replaceAll('+', '-').replaceAll('/', '_').replaceAll('=', '');
const SECRET = 'k'.repeat(43);

async function refused(cursor: string, scope = 's'): Promise<boolean> {
  try {
    await readCursor(SECRET, cursor, scope, 'cursor');
    return false;
  } catch (error) {
    expect(error).toMatchObject({
      status: 400,
      code: 'invalid_request',
      errors: [{ query: 'cursor', code: 'invalid_cursor' }],
    });
    return true;
  }
}

describe('cursors: one text per position, signed and scoped', () => {
  it('reads back what it signed', async () => {
    for (const position of [0, 1, 42, Number.MAX_SAFE_INTEGER]) {
      expect(await readCursor(SECRET, await signCursor(SECRET, position, 's'), 's', 'cursor')).toBe(position);
    }
  });

  it('refuses every other spelling of the same position under the same tag', async () => {
    const cursor = await signCursor(SECRET, 1, 's');
    const tag = cursor.split('.')[1] as string;
    expect(cursor).toBe(`${b64url('1')}.${tag}`);
    for (const spelling of ['01', ' 1', '1 ', '1.0', '+1', '1e0', '0x1', '']) {
      expect(await refused(`${b64url(spelling)}.${tag}`), JSON.stringify(spelling)).toBe(true);
    }
    // Base64 padding spelled out, or the head's unused bits set.
    expect(await refused(`${btoa('1')}.${tag}`)).toBe(true);
    expect(await refused(`MR.${tag}`)).toBe(true);
  });

  it('refuses a tag whose last character changed, even where base64 ignores the changed bits', async () => {
    const cursor = await signCursor(SECRET, 7, 's');
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (const c of alphabet) {
      if (c === cursor.at(-1)) continue;
      expect(await refused(cursor.slice(0, -1) + c), c).toBe(true);
    }
    for (const edited of [cursor + '=', cursor + '.x', ' ' + cursor, cursor.toUpperCase(), cursor.replace('.', '..')]) {
      if (edited !== cursor) expect(await refused(edited), edited).toBe(true);
    }
  });

  it('refuses a cursor of another scope or signed with another key', async () => {
    expect(await refused(await signCursor(SECRET, 3, 'other'))).toBe(true);
    expect(await refused(await signCursor('another key', 3, 's'))).toBe(true);
  });

  it('cursorKey: CURSOR_SECRET when set, else the stored key; never anything else', async () => {
    const stored = async () => 'stored';
    expect(await cursorKey('set', stored)).toBe('set');
    expect(await cursorKey(undefined, stored)).toBe('stored');
    expect(await cursorKey('', stored)).toBe('stored');
  });
});

describe('keyset positions', () => {
  it('are sealed: the holder reads nothing of the position, and only its scope opens it', async () => {
    const position = ['Salary review of Grace', 68719476741];
    const cursor = await signPosition(SECRET, position, 'query/1');
    expect(cursor).toBe(await signPosition(SECRET, position, 'query/1'));
    for (const shown of ['Salary', 'Grace', '68719476741', b64url('Salary'), b64url('["Salary')])
      expect(cursor).not.toContain(shown);
    expect(await readPosition(SECRET, cursor, 'query/1', '/cursor')).toEqual(position);
    const edited = `${cursor.slice(0, 20)}${cursor[20] === 'A' ? 'B' : 'A'}${cursor.slice(21)}`;
    for (const [text, scope] of [
      [cursor, 'query/2'],
      [edited, 'query/1'],
      [await signPosition('another secret of 43 characters, at least!!', position, 'query/1'), 'query/1'],
    ] as const)
      await expect(readPosition(SECRET, text, scope, '/cursor')).rejects.toMatchObject({
        status: 400,
        errors: [{ pointer: '/cursor', code: 'invalid_cursor' }],
      });
  });
});
