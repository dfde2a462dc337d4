import { AppError } from '@estate/platform/errors';

const MAX_CAS_RETRIES = 5;

/**
 * Optimistic update of a versioned resource: read, write if the version is still the one read,
 * and start again when another writer won. With `ifMatch` (the version the client saw) a stale
 * version is 412 instead.
 */
export async function updateVersioned<T extends { version: number }>(
  what: string,
  ifMatch: number | undefined,
  read: () => Promise<T>,
  write: (current: T) => Promise<T | null>,
): Promise<T> {
  for (let attempt = 0; attempt < MAX_CAS_RETRIES; attempt++) {
    const current = await read();
    if (ifMatch !== undefined && ifMatch !== current.version) {
      throw new AppError('version_mismatch', `The ${what} is at version ${current.version}, not ${ifMatch}`, { fields: { currentVersion: current.version } });
    }
    const saved = await write(current);
    if (saved) return saved;
    if (ifMatch !== undefined) throw new AppError('version_mismatch', `The ${what} changed while this update was applied`);
  }
  throw new AppError('conflict', `The ${what} is changing too often to apply this update; retry`);
}
