import { runScoped, scopeOf } from './async-scope';

describe('async scope', () => {
  it('keeps each owner its value across awaits, inside another owner’s scope and outside it', async () => {
    const store = {};
    const units = {};
    const seen: unknown[] = [];
    await runScoped(store, 'tx-1', async () => {
      await Promise.resolve();
      await runScoped(units, 'unit-1', async () => {
        await new Promise((resolve) => setImmediate(resolve));
        seen.push(scopeOf(store), scopeOf(units));
        // The same owner again: the inner value, for the inner call only.
        await runScoped(store, 'tx-2', async () => seen.push(scopeOf(store)));
        seen.push(scopeOf(store));
      });
      seen.push(scopeOf(units));
    });
    seen.push(scopeOf(store));
    expect(seen).toEqual(['tx-1', 'unit-1', 'tx-2', 'tx-1', undefined, undefined]);
  });

  it('gives work started elsewhere none of the scope, even while the scope is open', async () => {
    const store = {};
    let release!: () => void;
    const open = runScoped(store, 'tx', () => new Promise<void>((resolve) => (release = resolve)));
    const outside = await Promise.resolve().then(() => scopeOf(store));
    release();
    await open;
    expect(outside).toBeUndefined();
  });
});
