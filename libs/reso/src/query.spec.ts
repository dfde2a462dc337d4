import { ODataError } from './errors';
import { PROPERTY_FIELDS } from './mapping';
import { afterFilter, keyPredicate, parseCollectionQuery, preferredPageSize, type QueryResource } from './query';

const PROPERTY: QueryResource = { key: 'ListingKey', fields: PROPERTY_FIELDS as never, expandable: ['Media'] };
const parse = (options: Record<string, string>) => parseCollectionQuery(options, PROPERTY, 0);
const refusal = (options: Record<string, string>): ODataError => {
  try {
    parse(options);
  } catch (err) {
    return err as ODataError;
  }
  throw new Error(`${JSON.stringify(options)} was accepted`);
};

describe('RESO query options', () => {
  it('orders by the client keys then the key, in the last key direction', () => {
    expect(parse({ $orderby: 'ModificationTimestamp desc,ListPrice' }).orderBy).toEqual([
      { field: 'ModificationTimestamp', direction: 'desc' },
      { field: 'ListPrice', direction: 'asc' },
      { field: 'ListingKey', direction: 'asc' },
    ]);
    expect(parse({}).orderBy).toEqual([{ field: 'ListingKey', direction: 'asc' }]);
  });

  it('refuses what it does not serve, with a 400 naming it', () => {
    expect(refusal({ $search: 'x' })).toMatchObject({ status: 400, target: '$search' });
    expect(refusal({ $skip: '9001' })).toMatchObject({ status: 400, target: '$skip' });
    expect(refusal({ $top: '-1' }).status).toBe(400);
    expect(refusal({ $orderby: 'ListPrice,City,BedroomsTotal,YearBuilt' }).status).toBe(400);
    expect(refusal({ $orderby: 'X_Features' }).target).toBe('X_Features');
    expect(refusal({ $expand: 'Office' }).target).toBe('Office');
    expect(refusal({ $expand: 'Media($top=1)' }).message).toBe(
      '$expand: options inside Media(...) are not supported; expand Media alone',
    );
    expect(refusal({ $select: 'Nope' }).target).toBe('Nope');
    expect(refusal({ $select: '' }).target).toBe('$select');
    expect(refusal({ $select: 'ListingKey,' }).target).toBe('$select');
    expect(refusal({ $count: 'yes' }).status).toBe(400);
  });

  it('reads Prefer: odata.maxpagesize within bounds, and key predicates', () => {
    expect(preferredPageSize(undefined)).toEqual({ size: 100, applied: false });
    expect(preferredPageSize('return=minimal, odata.maxpagesize=250')).toEqual({ size: 250, applied: true });
    expect(preferredPageSize('odata.maxpagesize=5000')).toEqual({ size: 1000, applied: true });
    expect(keyPredicate("'lst_1'", 'ListingKey')).toBe('lst_1');
    expect(keyPredicate("ListingKey='it''s'", 'ListingKey')).toBe("it's");
    expect(keyPredicate('12', 'ListingKey')).toBeNull();
  });

  it('puts a keyset position as one tuple comparison when it can, otherwise missing values last', () => {
    const required = (f: string) => f !== 'BedroomsTotal';
    expect(
      afterFilter(
        [
          { field: 'ModificationTimestamp', direction: 'asc' },
          { field: 'ListingKey', direction: 'asc' },
        ],
        [5, 'k'],
        required,
      ),
    ).toEqual({ kind: 'tuple', fields: ['ModificationTimestamp', 'ListingKey'], op: 'gt', values: [5, 'k'] });
    expect(
      afterFilter(
        [
          { field: 'BedroomsTotal', direction: 'desc' },
          { field: 'ListingKey', direction: 'desc' },
        ],
        [null, 'k'],
        required,
      ),
    ).toEqual({
      kind: 'or',
      of: [
        { kind: 'const', value: false },
        {
          kind: 'and',
          of: [
            { kind: 'compare', field: 'BedroomsTotal', op: 'eq', value: null },
            { kind: 'compare', field: 'ListingKey', op: 'lt', value: 'k' },
          ],
        },
      ],
    });
  });
});
