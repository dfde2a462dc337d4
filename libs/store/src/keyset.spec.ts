import { decodeCursor } from '@estate/platform/pagination';
import { keyset, pageOf } from './keyset';

describe('keyset', () => {
  it('sorts by the field then id, and has no lower bound without a cursor', () => {
    expect(keyset({ field: 'price', direction: 1 }, undefined)).toEqual({
      sort: { price: 1, id: 1 },
      after: undefined,
    });
    expect(keyset({ field: 'id', direction: -1 }, undefined)).toEqual({ sort: { id: -1 }, after: undefined });
  });

  it('continues after the cursor id when sorting by id', () => {
    expect(keyset({ field: 'id', direction: 1 }, { v: null, id: 'k' }).after).toEqual({ id: { $gt: 'k' } });
    expect(keyset({ field: 'id', direction: -1 }, { v: null, id: 'k' }).after).toEqual({ id: { $lt: 'k' } });
  });

  it('continues beyond the value or on a tie with a later id', () => {
    expect(keyset({ field: 'price', direction: 1 }, { v: 5, id: 'k' }).after).toEqual({
      $or: [{ price: { $gt: 5 } }, { price: 5, id: { $gt: 'k' } }],
    });
  });

  it('descending: documents without the field come last, so they follow every valued one', () => {
    expect(keyset({ field: 'price', direction: -1 }, { v: 5, id: 'k' }).after).toEqual({
      $or: [{ price: { $lt: 5 } }, { price: 5, id: { $lt: 'k' } }, { price: { $exists: false } }],
    });
  });

  it('a cursor on a missing value: ascending continues into the valued ones, descending stays among the missing', () => {
    expect(keyset({ field: 'price', direction: 1 }, { v: null, id: 'k' }).after).toEqual({
      $or: [{ price: { $exists: false }, id: { $gt: 'k' } }, { price: { $exists: true } }],
    });
    expect(keyset({ field: 'price', direction: -1 }, { v: null, id: 'k' }).after).toEqual({
      price: { $exists: false },
      id: { $lt: 'k' },
    });
  });
});

describe('pageOf', () => {
  const order = { field: 'a.b', direction: 1 as const };

  it('has no next cursor when no more than the limit was fetched', () => {
    const fetched = [{ id: '1' }, { id: '2' }];
    expect(pageOf(fetched, 2, order, 'acc_1')).toEqual({ items: fetched, nextCursor: null });
  });

  it('cuts to the limit and points the cursor at the last item, reading dotted paths', () => {
    const fetched = [
      { id: '1', a: { b: 10 } },
      { id: '2', a: { b: 20 } },
      { id: '3', a: { b: 30 } },
    ];
    const page = pageOf(fetched, 2, order, 'acc_1');
    expect(page.items.map((i) => i.id)).toEqual(['1', '2']);
    expect(decodeCursor(page.nextCursor!, 'acc_1')).toEqual({ v: 20, id: '2' });
  });

  it('stores a missing value as null, and no value when sorting by id', () => {
    expect(decodeCursor(pageOf([{ id: '1' }, { id: '2' }], 1, order, 'acc_1').nextCursor!, 'acc_1')).toEqual({
      v: null,
      id: '1',
    });
    expect(
      decodeCursor(pageOf([{ id: '1' }, { id: '2' }], 1, { field: 'id', direction: -1 }, 'acc_1').nextCursor!, 'acc_1'),
    ).toEqual({
      v: null,
      id: '1',
    });
  });
});
