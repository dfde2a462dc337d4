import { missingAction, PulledKeys, withinRemovalShare } from './feed-sync.rules';

describe('feed removals', () => {
  const removals = { quarantineRuns: 3, maxRemovedPercent: 5 };

  it('quarantines first, counts each later key pull once, deletes at the quarantineRuns-th', () => {
    expect(missingAction(undefined, 'job_1', removals)).toEqual({ action: 'quarantine' });
    expect(missingAction({ runs: 1, runId: 'job_1' }, 'job_1', removals)).toEqual({ action: 'none' });
    expect(missingAction({ runs: 1, runId: 'job_1' }, 'job_2', removals)).toEqual({ action: 'count', runs: 2 });
    expect(missingAction({ runs: 2, runId: 'job_2' }, 'job_3', removals)).toEqual({ action: 'remove' });
    // Never deleted by the key pull that first finds it missing, even with quarantineRuns 1.
    expect(missingAction(undefined, 'job_1', { ...removals, quarantineRuns: 1 })).toEqual({ action: 'quarantine' });
    expect(missingAction({ runs: 1, runId: 'job_1' }, 'job_2', { ...removals, quarantineRuns: 1 })).toEqual({
      action: 'remove',
    });
  });

  it('trips the circuit breaker above the share allowed, and on a feed that answers no keys', () => {
    expect(withinRemovalShare(0, 0, removals)).toBe(true);
    expect(withinRemovalShare(5, 100, removals)).toBe(true);
    expect(withinRemovalShare(6, 100, removals)).toBe(false);
    expect(withinRemovalShare(100, 100, removals)).toBe(false);
    expect(withinRemovalShare(100, 100, { ...removals, maxRemovedPercent: 100 })).toBe(true);
  });
});

describe('the keys of a key pull', () => {
  it('answers which keys it holds, counts each once, and grows past its first capacity', () => {
    const keys = new PulledKeys();
    expect(keys.size).toBe(0);
    expect(keys.has('A1')).toBe(false);
    for (let i = 0; i < 5000; i++) keys.add(`L${i}`);
    // Seen again on a later page (the pull's pages overlap when the source moves under it).
    for (let i = 0; i < 100; i++) keys.add(`L${i * 7}`);
    expect(keys.size).toBe(5000);
    expect(keys.has('L0')).toBe(true);
    expect(keys.has('L4999')).toBe(true);
    expect(keys.has('L5000')).toBe(false);
    expect(keys.has('l0')).toBe(false);
    // Added after a lookup: still found, and counted.
    keys.add('L5000');
    expect(keys.has('L5000')).toBe(true);
    expect(keys.size).toBe(5001);
    expect(Array.from({ length: 5001 }, (_, i) => keys.has(`L${i}`)).every(Boolean)).toBe(true);
  });
});
