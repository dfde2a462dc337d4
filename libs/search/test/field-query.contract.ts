import type { Listing } from '@estate/contracts/listings';
import {
  afterFilter,
  filterFields,
  parseFilter,
  propertyIndexRecord,
  PROPERTY_FIELDS,
  type IndexValue,
  type OrderKey,
} from '@estate/reso';
import { INDEXED_FIELDS } from '../src/field-query';
import type { FieldQuery, ListingIndex } from '../src/listing-index';
import type { IndexHarness } from './listing-index.contract';

/**
 * The RESO field query on an index adapter: every operator of `$filter` per type, missing values, orders and keyset
 * pages. Each adapter must answer exactly the listings named here.
 */

const ACCOUNT = 'acc_reso';
const OTHER = 'acc_other';
const NOW = Date.parse('2025-06-01T00:00:00Z');
const fields = filterFields({ key: 'ListingKey', fields: PROPERTY_FIELDS as never });

interface Spec {
  price: number;
  status?: Listing['status'];
  beds?: number;
  city?: string;
  features?: string[];
  listedAt?: string;
  updatedAt: string;
  subType?: string;
}

function listing(key: string, s: Spec): Listing {
  return {
    id: key,
    status: s.status ?? 'active',
    pricing: { listPrice: s.price, currency: 'USD', pricePerArea: null },
    propertyDetails: {
      propertyType: 'residential',
      livingAreaUnits: 'sqft',
      ...(s.beds !== undefined ? { bedrooms: s.beds } : {}),
      ...(s.features ? { features: s.features } : {}),
      ...(s.subType ? { propertySubType: s.subType } : {}),
    },
    location: {
      address: {
        street: `1${key.slice(-1)} Main St`,
        city: s.city ?? 'Austin',
        stateOrProvince: 'TX',
        postalCode: '78701',
        country: 'US',
      },
    },
    media: { photoCount: 0, primaryPhoto: null, virtualTours: [], photosChangedAt: null },
    listedAt: s.listedAt ?? null,
    version: 1,
    createdAt: '2024-01-01T00:00:00.000Z',
    updatedAt: s.updatedAt,
  };
}

const LISTINGS = [
  listing('k1', {
    price: 100000,
    beds: 1,
    city: 'Austin',
    features: ['Visitable'],
    listedAt: '2019-12-31T23:55:55-09:00',
    updatedAt: '2024-01-01T00:00:00.000Z',
  }),
  listing('k2', {
    price: 250000.5,
    beds: 3,
    city: 'Dallas',
    status: 'pending',
    features: ['Visitable', 'Accessible Approach with Ramp'],
    listedAt: '2019-12-31T10:00:00.000Z',
    updatedAt: '2024-02-01T00:00:00.000Z',
    subType: 'single_family',
  }),
  listing('k3', {
    price: 400000,
    city: 'Houston',
    status: 'active_under_contract',
    features: ['pool', 'Bar'],
    updatedAt: '2024-03-01T00:00:00.000Z',
  }),
  listing('k4', {
    price: 400000,
    beds: 5,
    city: 'Austin',
    features: [],
    listedAt: '2020-06-01T00:00:00.000Z',
    updatedAt: '2024-03-01T00:00:00.000Z',
    subType: 'condo',
  }),
  listing('k5', {
    price: 999999.99,
    beds: 3,
    city: 'San Antonio',
    status: 'closed',
    features: ['Accessible Approach with Ramp'],
    updatedAt: '2030-01-01T00:00:00.000Z',
  }),
];
/** Another account's listing matches everything: it must never be answered. */
const FOREIGN = listing('k0', {
  price: 100000,
  beds: 1,
  city: 'Austin',
  features: ['Visitable'],
  updatedAt: '2024-01-01T00:00:00.000Z',
});

const CASES: Array<[string, string[]]> = [
  ['BedroomsTotal eq 3', ['k2', 'k5']],
  ['BedroomsTotal ne 3', ['k1', 'k3', 'k4']],
  ['BedroomsTotal gt 1', ['k2', 'k4', 'k5']],
  ['BedroomsTotal ge 3', ['k2', 'k4', 'k5']],
  ['BedroomsTotal lt 3', ['k1']],
  ['BedroomsTotal le 3', ['k1', 'k2', 'k5']],
  ['BedroomsTotal eq null', ['k3']],
  ['BedroomsTotal ne null', ['k1', 'k2', 'k4', 'k5']],
  ['not (BedroomsTotal le -1)', ['k1', 'k2', 'k3', 'k4', 'k5']],
  ['not (BedroomsTotal gt 1)', ['k1', 'k3']],
  ['ListPrice eq 250000.50', ['k2']],
  ['ListPrice gt 250000.5', ['k3', 'k4', 'k5']],
  ['ListPrice le 400000', ['k1', 'k2', 'k3', 'k4']],
  ["City eq 'Austin'", ['k1', 'k4']],
  ["City ne 'Austin'", ['k2', 'k3', 'k5']],
  ["City lt 'H'", ['k1', 'k2', 'k4']],
  ["City in ('Dallas', 'Houston')", ['k2', 'k3']],
  ["contains(City, 'ust')", ['k1', 'k3', 'k4']],
  ["startswith(City, 'San')", ['k5']],
  ["endswith(City, 'as')", ['k2']],
  ["not contains(City, 'ust')", ['k2', 'k5']],
  ["StandardStatus eq org.reso.metadata.enums.StandardStatus'Active'", ['k1', 'k4']],
  ["StandardStatus eq 'Pending'", ['k2']],
  ["StandardStatus ne org.reso.metadata.enums.StandardStatus'Active'", ['k2', 'k3', 'k5']],
  ["StandardStatus has org.reso.metadata.enums.StandardStatus'ActiveUnderContract'", ['k3']],
  ["StandardStatus in ('Closed', 'Pending')", ['k2', 'k5']],
  ["PropertySubType eq 'SingleFamilyResidence'", ['k2']],
  ["PropertySubType eq org.reso.metadata.enums.PropertySubType'Condominium'", ['k4']],
  ["AccessibilityFeatures has org.reso.metadata.enums.AccessibilityFeatures'Visitable'", ['k1', 'k2']],
  [
    "AccessibilityFeatures has org.reso.metadata.enums.AccessibilityFeatures'Visitable' and AccessibilityFeatures has org.reso.metadata.enums.AccessibilityFeatures'AccessibleApproachWithRamp'",
    ['k2'],
  ],
  ["AccessibilityFeatures/any(a: a eq 'AccessibleApproachWithRamp')", ['k2', 'k5']],
  ["AccessibilityFeatures/any(a: a eq 'Visitable' or a eq 'AccessibleApproachWithRamp')", ['k1', 'k2', 'k5']],
  // all() holds for an empty collection, as in OData.
  ["AccessibilityFeatures/all(a: a eq org.reso.metadata.enums.AccessibilityFeatures'Visitable')", ['k1', 'k3', 'k4']],
  ['AccessibilityFeatures/any()', ['k1', 'k2', 'k5']],
  ["InteriorFeatures/any(f: f eq 'Bar')", ['k3']],
  ["X_Features/any(f: f eq 'pool')", ['k3']],
  ['ModificationTimestamp gt 2024-02-01T00:00:00Z', ['k3', 'k4', 'k5']],
  ['ModificationTimestamp le now()', ['k1', 'k2', 'k3', 'k4']],
  ['ModificationTimestamp lt now()', ['k1', 'k2', 'k3', 'k4']],
  ['OnMarketTimestamp eq 2019-12-31T23:55:55-09:00', ['k1']],
  ['OnMarketTimestamp ne 2019-12-31T23:55:55-09:00', ['k2', 'k3', 'k4', 'k5']],
  ['OnMarketTimestamp ge 2019-12-31T23:55:55-09:00', ['k1', 'k4']],
  ['OnMarketDate eq 2019-12-31', ['k2']],
  ['OnMarketDate gt 2019-12-31', ['k1', 'k4']],
  ['OnMarketDate le 2020-01-01', ['k1', 'k2']],
  ["(City eq 'Austin' or City eq 'Dallas') and BedroomsTotal ge 3", ['k2', 'k4']],
  ["City eq 'Austin' or (BedroomsTotal eq 3 and not (StandardStatus eq 'Closed'))", ['k1', 'k2', 'k4']],
];

const keys = (items: Listing[]): string[] => items.map((l) => l.id);
const sorted = (items: Listing[]): string[] => keys(items).sort();

export function fieldQueryContract(name: string, harness: () => IndexHarness) {
  describe(`RESO field query: ${name}`, () => {
    let index: ListingIndex;
    let h: IndexHarness;
    const query = (q: Partial<FieldQuery>): Promise<{ items: Listing[]; total?: number }> =>
      index.select({
        accountId: ACCOUNT,
        order: [{ field: 'ListingKey', direction: 'asc' }],
        skip: 0,
        limit: 100,
        count: false,
        ...q,
      });

    beforeAll(async () => {
      h = harness();
      index = await h.open();
      await index.open();
      await index.upsert([
        ...LISTINGS.map((listing) => ({ accountId: ACCOUNT, listing })),
        { accountId: OTHER, listing: FOREIGN },
      ]);
      await index.refresh();
    });

    afterAll(async () => {
      await index.close();
      await h.cleanup?.();
    });

    it.each(CASES)('%s', async (filter, expected) => {
      const where = parseFilter(filter, { fields, now: NOW });
      const { items, total } = await query({ where, count: true });
      expect(sorted(items)).toEqual(expected);
      expect(total).toBe(expected.length);
    });

    it('orders by one or several keys, a missing value last either way, and skips', async () => {
      const order = async (o: OrderKey[]) => keys((await query({ order: o })).items);
      expect(
        await order([
          { field: 'ModificationTimestamp', direction: 'asc' },
          { field: 'ListingKey', direction: 'asc' },
        ]),
      ).toEqual(['k1', 'k2', 'k3', 'k4', 'k5']);
      expect(
        await order([
          { field: 'ModificationTimestamp', direction: 'desc' },
          { field: 'ListingKey', direction: 'desc' },
        ]),
      ).toEqual(['k5', 'k4', 'k3', 'k2', 'k1']);
      expect(
        await order([
          { field: 'BedroomsTotal', direction: 'asc' },
          { field: 'ListingKey', direction: 'asc' },
        ]),
      ).toEqual(['k1', 'k2', 'k5', 'k4', 'k3']);
      expect(
        await order([
          { field: 'BedroomsTotal', direction: 'desc' },
          { field: 'ListingKey', direction: 'asc' },
        ]),
      ).toEqual(['k4', 'k2', 'k5', 'k1', 'k3']);
      expect(
        await order([
          { field: 'ListPrice', direction: 'desc' },
          { field: 'City', direction: 'asc' },
          { field: 'ListingKey', direction: 'asc' },
        ]),
      ).toEqual(['k5', 'k4', 'k3', 'k2', 'k1']);
      expect(keys((await query({ skip: 2, limit: 2 })).items)).toEqual(['k3', 'k4']);
    });

    it('walks keyset pages of any order without repeating or skipping a listing', async () => {
      const orders: OrderKey[][] = [
        [
          { field: 'ModificationTimestamp', direction: 'asc' },
          { field: 'ListingKey', direction: 'asc' },
        ],
        [
          { field: 'BedroomsTotal', direction: 'desc' },
          { field: 'ListingKey', direction: 'desc' },
        ],
        [
          { field: 'OnMarketDate', direction: 'asc' },
          { field: 'ListPrice', direction: 'desc' },
          { field: 'ListingKey', direction: 'asc' },
        ],
      ];
      for (const order of orders) {
        const whole = keys((await query({ order })).items);
        const walked: string[] = [];
        let after: IndexValue[] | undefined;
        for (let page = 0; page < 10; page++) {
          const where = after ? afterFilter(order, after, (f) => INDEXED_FIELDS.get(f)!.required) : undefined;
          const { items } = await query({ order, limit: 2, ...(where ? { where } : {}) });
          if (items.length === 0) break;
          walked.push(...keys(items));
          const last = items[items.length - 1];
          const record = propertyIndexRecord(last);
          after = order.map((k) => record[k.field] as IndexValue);
        }
        expect(walked).toEqual(whole);
        expect(whole).toHaveLength(5);
      }
    });
  });
}
