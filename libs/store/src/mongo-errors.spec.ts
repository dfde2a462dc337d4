import { isDuplicateKey, isUnavailable } from './mongo-errors';

describe('mongo errors', () => {
  it('tells a duplicate key from MongoDB and from FerretDB on SQLite and PostgreSQL', () => {
    expect(isDuplicateKey({ code: 11000 })).toBe(true);
    expect(isDuplicateKey({ code: 1, message: 'UNIQUE constraint failed: x' })).toBe(true);
    expect(isDuplicateKey({ code: 1, message: 'ERROR: duplicate key value (SQLSTATE 23505)' })).toBe(true);
    expect(isDuplicateKey({ code: 1, message: 'something else' })).toBe(false);
  });

  it('tells "no server to talk to" from other failures', () => {
    expect(isUnavailable({ name: 'MongoServerSelectionError' })).toBe(true);
    expect(isUnavailable({ name: 'MongoNetworkError' })).toBe(true);
    expect(
      isUnavailable(Object.assign(new Error('This socket has been ended by the other party'), { code: 'EPIPE' })),
    ).toBe(true);
    expect(isUnavailable({ code: 1, message: 'failed to connect to `host=127.0.0.1`: connection refused' })).toBe(true);
    expect(isUnavailable({ name: 'MongoServerError', code: 2, message: 'BadValue' })).toBe(false);
    expect(isUnavailable(new Error('boom'))).toBe(false);
  });
});
