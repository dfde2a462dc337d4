import { AppError } from '@estate/platform/errors';
import { updateVersioned } from './update-versioned';

interface Doc {
  version: number;
  name: string;
}

const rejection = async (p: Promise<unknown>): Promise<AppError> => {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a rejection');
};

describe('updateVersioned', () => {
  it('writes what was read and resolves to the write result', async () => {
    const write = jest.fn(async (current: Doc) => ({ ...current, version: current.version + 1 }));
    const saved = await updateVersioned({ what: 'listing', read: async () => ({ version: 3, name: 'a' }), write });
    expect(saved).toEqual({ version: 4, name: 'a' });
    expect(write).toHaveBeenCalledTimes(1);
  });

  it('refuses with 412 version_mismatch when If-Match names another version, without writing', async () => {
    const write = jest.fn(async (current: Doc) => current);
    const err = await rejection(
      updateVersioned({ what: 'listing', read: async () => ({ version: 3, name: 'a' }), write, ifMatch: 2 }),
    );
    expect(err.code).toBe('version_mismatch');
    expect(err.status).toBe(412);
    expect(err.extra.fields).toEqual({ currentVersion: 3 });
    expect(write).not.toHaveBeenCalled();
  });

  it('reports a race lost under If-Match as 412 rather than retrying', async () => {
    const write = jest.fn(async () => null);
    const err = await rejection(
      updateVersioned({ what: 'lead', read: async () => ({ version: 2, name: 'a' }), write, ifMatch: 2 }),
    );
    expect(err.status).toBe(412);
    expect(write).toHaveBeenCalledTimes(1);
  });

  it('reads again and retries after losing a race, then succeeds', async () => {
    let version = 1;
    const read = jest.fn(async () => ({ version, name: 'a' }));
    const write = jest.fn(async (current: Doc) => {
      if (version < 3) {
        version++; // another writer got there first
        return null;
      }
      return { ...current, version: current.version + 1 };
    });
    const saved = await updateVersioned({ what: 'lead', read, write });
    expect(saved.version).toBe(4);
    expect(read).toHaveBeenCalledTimes(3);
    expect(write.mock.calls.map(([c]) => c.version)).toEqual([1, 2, 3]);
  });

  it('starts from the state the caller passes as `first`, and reads only after losing a race', async () => {
    const read = jest.fn(async () => ({ version: 5, name: 'fresh' }));
    const write = jest.fn(async (current: Doc) => (current.version === 4 ? null : current));
    const saved = await updateVersioned({ what: 'lead', first: { version: 4, name: 'given' }, read, write });
    expect(saved).toEqual({ version: 5, name: 'fresh' });
    expect(write.mock.calls.map(([c]) => c.name)).toEqual(['given', 'fresh']);
    expect(read).toHaveBeenCalledTimes(1);
  });

  it('gives up with 409 conflict after the given number of lost races', async () => {
    const write = jest.fn(async () => null);
    const err = await rejection(
      updateVersioned({ what: 'lead', read: async () => ({ version: 1, name: 'a' }), write, attempts: 4 }),
    );
    expect(err.code).toBe('conflict');
    expect(err.status).toBe(409);
    expect(write).toHaveBeenCalledTimes(4);
  });

  it('uses versionOf when the version is not `current.version`', async () => {
    const err = await rejection(
      updateVersioned({
        what: 'config',
        read: async () => ({ rev: 7 }),
        versionOf: (c) => c.rev,
        write: async () => 'x',
        ifMatch: 6,
      }),
    );
    expect(err.extra.fields).toEqual({ currentVersion: 7 });
  });
});
