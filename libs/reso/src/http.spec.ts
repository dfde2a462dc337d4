import { ODataError } from './errors';
import { odataQueryOptions } from './http';

describe('odataQueryOptions', () => {
  it('takes system options in any case, with or without $, under their usual name', () => {
    expect({ ...odataQueryOptions({ filter: 'a eq 1', $SELECT: 'a', Top: '5', $orderby: 'a' }) }).toEqual({
      $filter: 'a eq 1',
      $select: 'a',
      $top: '5',
      $orderby: 'a',
    });
  });

  it('keeps other options as they are, whatever they are called', () => {
    expect({ ...odataQueryOptions({ foo: '1', $custom: '2', ['__proto__']: '3', constructor: '4' }) }).toEqual({
      foo: '1',
      $custom: '2',
      ['__proto__']: '3',
      constructor: '4',
    });
  });

  it('refuses an option given twice, under one spelling or two', () => {
    for (const query of [{ $top: ['1', '2'] }, { $filter: 'a eq 1', filter: 'a eq 2' }, { $top: '1', $TOP: '2' }]) {
      let refused: unknown;
      try {
        odataQueryOptions(query);
      } catch (err) {
        refused = err;
      }
      expect(refused).toBeInstanceOf(ODataError);
      expect(refused).toMatchObject({ status: 400 });
    }
  });
});
