import { listingSearchQuery } from '@estate/contracts/listings';
import { AppError } from '@estate/platform/errors';
import { cursorOf, toIndexSearch } from './search-query.rules';

const parse = (query: Record<string, string | string[]>) => listingSearchQuery.parse(query);

describe('search query parameters to an index search', () => {
  it('scopes to the account, converts dates and geo, and orders by relevance only with q', () => {
    const search = toIndexSearch(
      'acc_1',
      parse({
        q: 'pool',
        near: '30.2,-97.7',
        radiusKm: '3',
        bbox: '-98,30,-97,31',
        updatedSince: '2024-01-01T00:00:00Z',
        facets: 'city,status',
      }),
    );
    expect(search).toMatchObject({
      accountId: 'acc_1',
      sort: { by: 'relevance' },
      limit: 20,
      facets: ['city', 'status'],
      filters: {
        q: 'pool',
        near: { lat: 30.2, lng: -97.7, radiusKm: 3 },
        bbox: { minLng: -98, minLat: 30, maxLng: -97, maxLat: 31 },
        updatedSince: Date.parse('2024-01-01T00:00:00Z'),
      },
    });
    expect(toIndexSearch('acc_1', parse({})).sort).toEqual({ by: 'createdAt', direction: 'desc' });
    expect(toIndexSearch('acc_1', parse({ q: 'pool', sort: '-listPrice' })).sort).toEqual({
      by: 'listPrice',
      direction: 'desc',
    });
  });

  it('round-trips a cursor for its own order only, including a position without a value', () => {
    const sort = { by: 'listedAt', direction: 'asc' } as const;
    const cursor = cursorOf({ value: null, id: 'lst_9' }, sort, 'acc_1')!;
    expect(toIndexSearch('acc_1', parse({ sort: 'listedAt', cursor })).after).toEqual({ value: null, id: 'lst_9' });
    expect(() => toIndexSearch('acc_1', parse({ sort: '-listedAt', cursor }))).toThrow(AppError);
    const relevance = cursorOf({ value: null, id: 'lst_9' }, { by: 'relevance' }, 'acc_1')!;
    expect(() => toIndexSearch('acc_1', parse({ q: 'x', cursor: relevance }))).toThrow(
      expect.objectContaining({ code: 'invalid_cursor' }),
    );
    expect(cursorOf(null, sort, 'acc_1')).toBeNull();
  });

  it("round-trips a relevance cursor's window, and refuses a window that is not one", () => {
    const relevance = { by: 'relevance' } as const;
    for (const window of [
      [0, null],
      [1200, 3400],
    ] as const) {
      const cursor = cursorOf({ value: 2.5, id: 'lst_9', window: [...window] }, relevance, 'acc_1')!;
      expect(toIndexSearch('acc_1', parse({ q: 'x', cursor })).after).toEqual({ value: 2.5, id: 'lst_9', window });
    }
    const invalid = expect.objectContaining({ code: 'invalid_cursor' });
    for (const window of [
      [3400, 1200],
      [-1, null],
      [1.5, 3],
      [null, 3],
    ]) {
      const cursor = cursorOf({ value: 2.5, id: 'lst_9', window: window as [number, null] }, relevance, 'acc_1')!;
      expect(() => toIndexSearch('acc_1', parse({ q: 'x', cursor }))).toThrow(invalid);
    }
    const sorted = cursorOf(
      { value: 2.5, id: 'lst_9', window: [0, 10] },
      { by: 'listPrice', direction: 'asc' },
      'acc_1',
    )!;
    expect(() => toIndexSearch('acc_1', parse({ sort: 'listPrice', cursor: sorted }))).toThrow(invalid);
  });
});
