import { afterAttempt, parseRetrySchedule, shouldDisable } from './delivery.rules';

describe('the retry schedule', () => {
  const now = new Date('2026-01-01T00:00:00Z');
  const schedule = [5000, 300_000];

  it('waits the next delay after a failure, gives up when none is left, and ends on success', () => {
    expect(afterAttempt(false, 1, now, schedule)).toEqual({
      state: 'pending',
      nextAttemptAt: new Date(now.getTime() + 5000),
    });
    expect(afterAttempt(false, 2, now, schedule)).toEqual({
      state: 'pending',
      nextAttemptAt: new Date(now.getTime() + 300_000),
    });
    expect(afterAttempt(false, 3, now, schedule)).toEqual({ state: 'failed' });
    expect(afterAttempt(true, 3, now, schedule)).toEqual({ state: 'succeeded' });
  });

  it('parses a configured schedule', () => {
    expect(parseRetrySchedule('100, 200,300')).toEqual([100, 200, 300]);
    expect(parseRetrySchedule('100,x')).toBeNull();
    expect(parseRetrySchedule('')).toBeNull();
  });

  it('disables an endpoint failing for five days', () => {
    expect(shouldDisable(undefined, now)).toBe(false);
    expect(shouldDisable('2025-12-27T00:00:01Z', now)).toBe(false);
    expect(shouldDisable('2025-12-27T00:00:00Z', now)).toBe(true);
  });
});
