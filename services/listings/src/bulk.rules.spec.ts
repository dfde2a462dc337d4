import { AppError } from '@estate/platform/errors';
import { newId } from '@estate/platform/ids';
import { bulkListingId, itemError, laneOf, LISTING_IDS, markOf, stateAfter, submittedCommand } from './bulk.rules';

describe('bulk rules', () => {
  it('derives one listing id per job item, shaped like every listing id', () => {
    const id = bulkListingId({ jobId: 'job_1', index: 3 });
    expect(id).toBe(bulkListingId({ jobId: 'job_1', index: 3 }));
    expect(id).not.toBe(bulkListingId({ jobId: 'job_1', index: 4 }));
    expect(id).not.toBe(bulkListingId({ jobId: 'job_2', index: 3 }));
    expect(id).toMatch(/^lst_[A-Za-z0-9_-]{16}$/);
  });

  it('derives ids in insert order for jobs made since the ordered scheme: by job time, then by item', () => {
    const first = { id: newId('job', new Date('2026-11-27T10:00:00Z')), listingIds: LISTING_IDS };
    const later = { id: newId('job', new Date('2026-11-27T10:00:01Z')), listingIds: LISTING_IDS };
    const ids = [0, 1, 35, 36, 1_000, 99_999].map((i) => bulkListingId(markOf(first, i)));
    ids.push(bulkListingId(markOf(later, 0)));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^lst_[0-9a-z]{17}[A-Za-z0-9_-]{12}$/);
    expect(bulkListingId(markOf(first, 7))).toBe(bulkListingId(markOf(first, 7)));
    // A job made before the scheme keeps the hash it started with, so its repeated creates still find their first.
    const older = { id: first.id };
    expect(markOf(older, 7)).toEqual({ jobId: first.id, index: 7 });
    expect(bulkListingId(markOf(older, 7))).toMatch(/^lst_[A-Za-z0-9_-]{16}$/);
    expect(bulkListingId(markOf({ id: 'job_1', listingIds: LISTING_IDS }, 3))).toBe(
      bulkListingId({ jobId: 'job_1', index: 3 }),
    );
  });

  it("fixes the queue command's event id per job, so re-queuing it is de-duplicated", () => {
    const command = submittedCommand({ id: 'job_1', accountId: 'acc_1', createdAt: '2025-01-01T00:00:00.000Z' });
    expect(command).toEqual({
      eventId: 'job_1:submitted',
      accountId: 'acc_1',
      jobId: 'job_1',
      version: 1,
      occurredAt: '2025-01-01T00:00:00.000Z',
    });
  });

  it('runs items naming an id alone, keyed items behind the same key, and the rest freely', () => {
    expect(laneOf({ id: 'lst_1', status: 'closed' })).toEqual({ kind: 'alone' });
    expect(laneOf({ externalId: ' MLS-1', source: 'acme ' })).toEqual({ kind: 'key', key: 'acme|MLS-1' });
    expect(laneOf({ externalId: 'MLS-1' })).toEqual({ kind: 'free' });
  });

  it('ends a job succeeded, partially failed or failed by its counts', () => {
    expect(stateAfter({ succeeded: 3, failed: 0 })).toBe('succeeded');
    expect(stateAfter({ succeeded: 2, failed: 1 })).toBe('partially_failed');
    expect(stateAfter({ succeeded: 0, failed: 3 })).toBe('failed');
  });

  it('reports an item error with its first field as path, and the field a not-found or duplicate is about', () => {
    const invalid = new AppError('validation_failed', 'The item is not valid', {
      errors: [
        { path: 'colour', message: 'is not a known field' },
        { path: 'status', message: 'is not one of the statuses' },
      ],
    });
    expect(itemError(4, { externalId: 'X-1', colour: 'red' }, invalid)).toEqual({
      index: 4,
      externalId: 'X-1',
      code: 'validation_failed',
      path: 'colour',
      message: 'colour: is not a known field; status: is not one of the statuses',
    });
    expect(
      itemError(0, { id: 'lst_gone' }, new AppError('listing_not_found', 'Listing lst_gone not found')),
    ).toMatchObject({ path: 'id', code: 'listing_not_found' });
  });
});
