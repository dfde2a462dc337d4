import { ODataError } from './errors';
import { parseFilter, type FieldFilter } from './filter';
import { PROPERTY_FIELDS } from './mapping';
import { filterFields } from './query';

const fields = filterFields({ key: 'ListingKey', fields: PROPERTY_FIELDS as never });
const NOW = Date.parse('2026-01-01T00:00:00Z');
const parse = (text: string): FieldFilter => parseFilter(text, { fields, now: NOW });
const refused = (text: string): ODataError => {
  try {
    parse(text);
  } catch (err) {
    expect(err).toBeInstanceOf(ODataError);
    return err as ODataError;
  }
  throw new Error(`${text} was accepted`);
};

describe('$filter translation', () => {
  it('reads every comparison on numbers, in both operand orders', () => {
    for (const op of ['eq', 'ne', 'gt', 'ge', 'lt', 'le'] as const)
      expect(parse(`BedroomsTotal ${op} 3`)).toEqual({ kind: 'compare', field: 'BedroomsTotal', op, value: 3 });
    expect(parse('100000.50 lt ListPrice')).toEqual({ kind: 'compare', field: 'ListPrice', op: 'gt', value: 100000.5 });
  });

  it('reads enumeration literals qualified or plain, and has on a single value', () => {
    const active = { kind: 'compare', field: 'StandardStatus', op: 'eq', value: 'Active' };
    expect(parse("StandardStatus eq org.reso.metadata.enums.StandardStatus'Active'")).toEqual(active);
    expect(parse("StandardStatus eq 'Active'")).toEqual(active);
    expect(parse("StandardStatus has org.reso.metadata.enums.StandardStatus'Active'")).toEqual(active);
    expect(refused("StandardStatus eq 'Sold'").message).toMatch(/Sold is not a member/);
    expect(refused("StandardStatus eq org.reso.metadata.enums.PropertyType'Land'").message).toMatch(/takes/);
    expect(refused("StandardStatus gt 'Active'").message).toMatch(/enumeration/);
  });

  it('reads timestamps, dates and now()', () => {
    expect(parse('ModificationTimestamp gt 2019-12-31T23:55:55-09:00')).toEqual({
      kind: 'compare',
      field: 'ModificationTimestamp',
      op: 'gt',
      value: Date.parse('2020-01-01T08:55:55Z'),
    });
    expect(parse('ModificationTimestamp le now()')).toMatchObject({ value: NOW });
    expect(parse('OnMarketDate ge 2020-01-01')).toMatchObject({ value: '2020-01-01' });
    expect(refused("OnMarketDate ge 'soon'").status).toBe(400);
  });

  it('reads and, or, not, parentheses and in', () => {
    expect(parse("(City eq 'Austin' or City eq 'Dallas') and not (ListPrice lt 5)")).toEqual({
      kind: 'and',
      of: [
        { kind: 'in', field: 'City', values: ['Austin', 'Dallas'] },
        { kind: 'not', of: { kind: 'compare', field: 'ListPrice', op: 'lt', value: 5 } },
      ],
    });
    expect(parse("City in ('Austin', 'it''s in (x)')")).toEqual({
      kind: 'in',
      field: 'City',
      values: ['Austin', "it's in (x)"],
    });
  });

  it('reads any, all and has over enumeration collections', () => {
    expect(
      parse(
        "AccessibilityFeatures/any(a: a eq 'Visitable' or a eq org.reso.metadata.enums.AccessibilityFeatures'AccessibleApproachWithRamp')",
      ),
    ).toEqual({
      kind: 'any',
      field: 'AccessibilityFeatures',
      values: ['Visitable', 'AccessibleApproachWithRamp'],
    });
    expect(parse("AccessibilityFeatures/all(a: a eq 'Visitable')")).toEqual({
      kind: 'all',
      field: 'AccessibilityFeatures',
      values: ['Visitable'],
    });
    expect(parse("AccessibilityFeatures has org.reso.metadata.enums.AccessibilityFeatures'Visitable'")).toEqual({
      kind: 'any',
      field: 'AccessibilityFeatures',
      values: ['Visitable'],
    });
    expect(parse('X_Features/any()')).toEqual({ kind: 'any', field: 'X_Features' });
  });

  it('reads contains, startswith and endswith on strings', () => {
    for (const fn of ['contains', 'startswith', 'endswith'] as const)
      expect(parse(`${fn}(City,'Aus')`)).toEqual({ kind: 'text', field: 'City', fn, value: 'Aus' });
  });

  it('reads long chains of one operator and in lists of up to 200 values', () => {
    const keys = Array.from({ length: 200 }, (_, i) => `'key-${i}'`);
    expect(parse(`ListingKey in (${keys.join(',')})`)).toEqual({
      kind: 'in',
      field: 'ListingKey',
      values: keys.map((k) => k.slice(1, -1)),
    });
    const prices = Array.from({ length: 100 }, (_, i) => `ListPrice eq ${i}`);
    const chain = parse(`${prices.join(' or ')} or City eq 'Austin'`);
    expect(chain).toMatchObject({ kind: 'or' });
    expect((chain as { of: unknown[] }).of).toHaveLength(101);
    expect(parse("(ListPrice gt 1 and (BedroomsTotal eq 2 and City eq 'Austin')) and ListPrice lt 9")).toEqual({
      kind: 'and',
      of: [
        { kind: 'compare', field: 'ListPrice', op: 'gt', value: 1 },
        { kind: 'compare', field: 'BedroomsTotal', op: 'eq', value: 2 },
        { kind: 'compare', field: 'City', op: 'eq', value: 'Austin' },
        { kind: 'compare', field: 'ListPrice', op: 'lt', value: 9 },
      ],
    });
  });

  it('refuses unknown fields and functions, naming them, and bounds depth and in lists', () => {
    expect(refused("BadField eq 'SoBad'")).toMatchObject({ status: 400, target: 'BadField' });
    expect(refused("tolower(City) eq 'austin'").message).toMatch(/tolower/);
    expect(refused(`${'('.repeat(40)}BedroomsTotal eq 1${')'.repeat(40)}`).message).toMatch(/deeper/);
    expect(refused(`BedroomsTotal in (${Array.from({ length: 201 }, (_, i) => i).join(',')})`).message).toMatch(
      /at most/,
    );
    expect(refused('PublicRemarks eq 1').target).toBe('PublicRemarks');
    expect(refused('BedroomsTotal eq').status).toBe(400);
  });
});
