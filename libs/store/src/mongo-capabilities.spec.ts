import { allOf } from './mongo-capabilities';

describe('allOf', () => {
  it('puts conditions on different fields side by side, and one field asked the same twice once', () => {
    expect(allOf([{ _id: 'a', version: 2 }, { _id: 'a' }, { items: [1, 2] }])).toEqual({
      _id: 'a',
      version: 2,
      items: [1, 2],
    });
    expect(allOf([{ items: { $exists: false } }, { _id: 'a' }])).toEqual({ items: { $exists: false }, _id: 'a' });
  });

  it('keeps $and when two filters ask one field differently, or a filter is an operator itself', () => {
    const differently = [{ _id: 'a', n: 1 }, { n: { $gt: 0 } }];
    expect(allOf(differently)).toEqual({ $and: differently });
    const operator = [{ $or: [{ a: 1 }, { b: 1 }] }, { _id: 'a' }];
    expect(allOf(operator)).toEqual({ $and: operator });
  });
});
