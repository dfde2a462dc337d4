import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '@estate/platform/errors';

/** How many times a compare-and-set is tried before the caller is told to retry. */
export const VERSIONED_ATTEMPTS = 8;

export interface VersionedUpdate<T, R> {
  /** What is changed, for the error messages ("listing", "lead"). */
  what: string;
  /** Reads the current state (throws its own not-found error). */
  read: () => Promise<T>;
  /** The state the caller has just read: the first attempt starts from it instead of reading again. */
  first?: T;
  /** Writes if the state is still the one read: the result, or null when another writer won. */
  write: (current: T) => Promise<R | null>;
  /** The version the client saw (`If-Match`): a different current version is 412, and so is a lost race. */
  ifMatch?: number;
  /** The version of what `read` returned; `current.version` unless given. */
  versionOf?: (current: T) => number;
  attempts?: number;
}

/**
 * The one optimistic-concurrency loop: read, write guarded by the version read, and start again
 * (after a short random pause) when another writer won. Gives up with 409 `conflict` when the
 * resource keeps changing.
 */
export async function updateVersioned<T, R = T>(update: VersionedUpdate<T, R>): Promise<R> {
  const attempts = update.attempts ?? VERSIONED_ATTEMPTS;
  const versionOf = update.versionOf ?? ((t: T) => (t as { version: number }).version);
  for (let attempt = 0; attempt < attempts; attempt++) {
    const current = attempt === 0 && update.first !== undefined ? update.first : await update.read();
    const version = versionOf(current);
    if (update.ifMatch !== undefined && update.ifMatch !== version) {
      throw new AppError('version_mismatch', `The ${update.what} is at version ${version}, not ${update.ifMatch}`, {
        fields: { currentVersion: version },
      });
    }
    const saved = await update.write(current);
    if (saved !== null) return saved;
    if (update.ifMatch !== undefined)
      throw new AppError('version_mismatch', `The ${update.what} changed while this update was applied`);
    await sleep(Math.random() * Math.min(2 ** attempt, 50));
  }
  throw new AppError('conflict', `The ${update.what} is changing too often to apply this change; retry`);
}
