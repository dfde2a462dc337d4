import { missingAction, withinRemovalShare } from './feed-sync.rules';

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
