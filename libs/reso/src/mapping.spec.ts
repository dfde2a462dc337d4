import type { Listing } from '@estate/contracts/listings';
import { mediaRecord, PROPERTY_FIELDS, propertyField, propertyRecord, splitStreet } from './mapping';

const listing: Listing = {
  id: 'lst_1',
  externalId: 'MLS-1',
  source: 'acme',
  mlsNumber: '1',
  status: 'active_under_contract',
  pricing: { listPrice: 450000, currency: 'USD', pricePerArea: 243.24 },
  propertyDetails: {
    propertyType: 'residential_income',
    propertySubType: 'single_family',
    bedrooms: 3,
    bathrooms: 2.5,
    livingArea: 1850,
    livingAreaUnits: 'sqm',
    features: ['garage', 'Accessible Approach with Ramp', 'Bar', 'Visitable', 'Visitable'],
  },
  location: {
    address: {
      street: '3106 Riverside St',
      unit: '4B',
      city: 'Austin',
      stateOrProvince: 'TX',
      postalCode: '78701',
      country: 'US',
    },
  },
  media: {
    photoCount: 2,
    primaryPhoto: null,
    virtualTours: [{ id: 'med_t', url: 'https://tour.example/1' }],
    photosChangedAt: '2026-01-02T03:04:05.000Z',
  },
  listedAt: '2019-12-31T23:55:55-09:00',
  version: 7,
  createdAt: '2024-01-01T00:00:00.000Z',
  updatedAt: '2024-02-01T00:00:00.000Z',
};

describe('the RESO mapping table', () => {
  it('maps a listing to DD names, types and enumeration members', () => {
    expect(propertyRecord(listing)).toMatchObject({
      ListingKey: 'lst_1',
      ListingId: '1',
      OriginatingSystemName: 'acme',
      OriginatingSystemKey: 'MLS-1',
      StandardStatus: 'ActiveUnderContract',
      PropertyType: 'ResidentialIncome',
      PropertySubType: 'SingleFamilyResidence',
      X_PropertySubType: 'single_family',
      BathroomsTotalInteger: 3,
      X_BathroomsTotal: 2.5,
      LivingAreaUnits: 'SquareMeters',
      StreetNumber: '3106',
      StreetName: 'Riverside St',
      UnitNumber: '4B',
      OnMarketDate: '2020-01-01',
      OnMarketTimestamp: '2019-12-31T23:55:55-09:00',
      AccessibilityFeatures: ['AccessibleApproachWithRamp', 'Visitable'],
      InteriorFeatures: ['Bar'],
      ExteriorFeatures: [],
      X_Features: ['garage', 'Accessible Approach with Ramp', 'Bar', 'Visitable', 'Visitable'],
      VirtualTourURLUnbranded: 'https://tour.example/1',
      ClosePrice: null,
    });
  });

  it('reads RESO values back into ours, for the fields that have an inverse', () => {
    expect(propertyField.get('StandardStatus')!.fromReso!('ActiveUnderContract')).toBe('active_under_contract');
    expect(propertyField.get('PropertyType')!.fromReso!('CommercialLease')).toBe('commercial_lease');
    expect(propertyField.get('LivingAreaUnits')!.fromReso!('SquareFeet')).toBe('sqft');
    expect(propertyField.get('AccessibilityFeatures')!.fromReso!(['AccessibleApproachWithRamp'])).toEqual([
      'Accessible Approach with Ramp',
    ]);
    expect(propertyField.get('StandardStatus')!.fromReso!('Sold')).toBeUndefined();
    for (const f of PROPERTY_FIELDS) expect(f.name === 'ListingKey' || f.name.startsWith('X_') || f.type).toBeTruthy();
  });

  it('splits street numbers from names, and makes media URLs absolute', () => {
    expect(splitStreet('FM 1431')).toEqual({ name: 'FM 1431' });
    expect(splitStreet('12-14 Elm St')).toEqual({ number: '12-14', name: 'Elm St' });
    const media = mediaRecord({
      baseUrl: 'https://api.example.com',
      media: {
        id: 'med_1',
        listingId: 'lst_1',
        kind: 'image',
        caption: 'x'.repeat(80),
        order: 0,
        isPrimary: true,
        status: 'ready',
        failureReason: null,
        width: 10,
        height: 5,
        bytes: 100,
        contentType: 'image/png',
        url: null,
        urls: { original: '/files/t/original', large: '/files/t/large', thumb: '/files/t/thumb' },
        version: 1,
        createdAt: '2024-01-01T00:00:00.000Z',
        updatedAt: '2024-01-02T00:00:00.000Z',
      },
    });
    expect(media).toMatchObject({
      MediaURL: 'https://api.example.com/files/t/large',
      ShortDescription: 'x'.repeat(50),
      LongDescription: 'x'.repeat(80),
      MediaType: 'Png',
      MediaCategory: 'Photo',
      ResourceName: 'Property',
    });
  });
});
