import { decodeCursor, encodeCursor, useCursorSecrets } from './index';

const body = (cursor: string) => cursor.split('.')[0];
const tag = (cursor: string) => cursor.split('.')[1];
const ACCOUNT = 'acc_1';
const json = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('signed cursors', () => {
  beforeAll(() => useCursorSecrets(['current-secret-0123456789abcdef']));

  it('round-trips what a page puts in it', () => {
    for (const v of [null, 3, 'b', ['-listPrice', 120_000], [5, '2024-01-01T00:00:00.000Z']])
      expect(decodeCursor(encodeCursor({ v, id: 'lst_1' }, ACCOUNT), ACCOUNT)).toEqual({ v, id: 'lst_1' });
  });

  it('refuses an edited, forged, unsigned or malformed cursor with invalid_cursor', () => {
    const good = encodeCursor({ v: 10, id: 'lst_1' }, ACCOUNT);
    const attempts = [
      `${json({ v: { $ne: null }, id: 'x' })}.${tag(good)}`, // an operator put in a signed cursor's place
      json({ v: { $ne: null }, id: 'x' }), // the old unsigned form
      `${json({ v: 11, id: 'lst_1' })}.${tag(good)}`, // the value changed, the tag kept
      `${body(good)}.${tag(good).slice(0, -2)}AA`, // the tag changed
      `${good}.extra`,
      'nonsense',
      '',
    ];
    for (const cursor of attempts)
      expect(() => decodeCursor(cursor, ACCOUNT)).toThrow(expect.objectContaining({ code: 'invalid_cursor' }));
  });

  it('refuses positions no page makes, even signed (objects, nested arrays)', () => {
    for (const v of [{ $ne: null }, [[1]], { s: 'x' }])
      expect(() => decodeCursor(encodeCursor({ v, id: 'x' }, ACCOUNT), ACCOUNT)).toThrow(
        expect.objectContaining({ code: 'invalid_cursor' }),
      );
  });

  it('accepts cursors of the previous secret during a rotation, and not after it', () => {
    const old = encodeCursor({ v: 1, id: 'a' }, ACCOUNT);
    useCursorSecrets(['next-secret-0123456789abcdefghij', 'current-secret-0123456789abcdef']);
    expect(decodeCursor(old, ACCOUNT)).toEqual({ v: 1, id: 'a' });
    useCursorSecrets(['next-secret-0123456789abcdefghij']);
    expect(() => decodeCursor(old, ACCOUNT)).toThrow(expect.objectContaining({ code: 'invalid_cursor' }));
  });

  it("refuses another account's cursor: a cursor is issued to one account", () => {
    const mine = encodeCursor({ v: 10, id: 'lst_1' }, ACCOUNT);
    expect(decodeCursor(mine, ACCOUNT)).toEqual({ v: 10, id: 'lst_1' });
    expect(() => decodeCursor(mine, 'acc_2')).toThrow(expect.objectContaining({ code: 'invalid_cursor' }));
  });
});
