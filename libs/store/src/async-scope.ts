import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * What the asynchronous work under way runs inside, per owner: a SQLite store's open transaction, a unit of work.
 *
 * One AsyncLocalStorage for every owner of the process. Node 20 copies each storage that has run once onto every
 * promise the process creates afterwards, anywhere: nine storages (five stores and four units of work in the embedded
 * profile) made every promise of every request pay nine copies. Here it pays one (decision 0137).
 */
const storage = new AsyncLocalStorage<ReadonlyMap<object, unknown>>();

/** Runs `fn` with `owner`'s value set to `value`, the other owners' values as they are. */
export function runScoped<R>(owner: object, value: unknown, fn: () => R): R {
  const outer = storage.getStore();
  const inner = new Map(outer);
  inner.set(owner, value);
  return storage.run(inner, fn);
}

/** `owner`'s value where the caller runs, if it runs inside one (see `runScoped`). */
export function scopeOf<T>(owner: object): T | undefined {
  return storage.getStore()?.get(owner) as T | undefined;
}
