import { allOf } from './filters';

describe('allOf', () => {
  it('puts conditions on different fields side by side, and one field asked the same twice once', () => {
    expect(allOf([{ _id: 'a', version: 2 }, { _id: 'a' }, { items: [1, 2] }])).toEqual({
      _id: 'a',
      version: 2,
      items: [1, 2],
    });
    expect(allOf([{ items: { $exists: false } }, { _id: 'a' }])).toEqual({ items: { $exists: false }, _id: 'a' });
  });

  it('puts an operator of one filter beside the fields of the others (a keyset page after a scope)', () => {
    const after = { $or: [{ createdAt: { $gt: 't' } }, { createdAt: 't', id: { $gt: 'x' } }] };
    expect(allOf([{ accountId: 'acc_1', leadId: 'lead_1' }, after])).toEqual({
      accountId: 'acc_1',
      leadId: 'lead_1',
      ...after,
    });
  });

  it('keeps $and when two filters ask one field, or one operator, differently', () => {
    const differently = [{ _id: 'a', n: 1 }, { n: { $gt: 0 } }];
    expect(allOf(differently)).toEqual({ $and: differently });
    const twoOr = [{ $or: [{ a: 1 }, { b: 1 }] }, { $or: [{ c: 1 }, { d: 1 }] }];
    expect(allOf(twoOr)).toEqual({ $and: twoOr });
  });
});
