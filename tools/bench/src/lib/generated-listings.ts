import type { Listing } from '@estate/contracts/listings';
import { listingStatuses, propertyTypes } from '@estate/contracts/listings';

/** Deterministic listings for the search bench: same seed, same data, so runs compare. */
export const CITIES = [
  { city: 'Austin', state: 'TX', lat: 30.27, lng: -97.74 },
  { city: 'Dallas', state: 'TX', lat: 32.78, lng: -96.8 },
  { city: 'Houston', state: 'TX', lat: 29.76, lng: -95.37 },
  { city: 'San Antonio', state: 'TX', lat: 29.42, lng: -98.49 },
  { city: 'Denver', state: 'CO', lat: 39.74, lng: -104.99 },
  { city: 'Boulder', state: 'CO', lat: 40.01, lng: -105.27 },
  { city: 'Seattle', state: 'WA', lat: 47.61, lng: -122.33 },
  { city: 'Portland', state: 'OR', lat: 45.52, lng: -122.68 },
  { city: 'Phoenix', state: 'AZ', lat: 33.45, lng: -112.07 },
  { city: 'Tucson', state: 'AZ', lat: 32.22, lng: -110.97 },
];

export const WORDS = (
  'bright spacious modern renovated cozy charming historic luxury quiet sunny open-plan kitchen garden pool garage fireplace basement ' +
  'view lake river park downtown school family office patio deck hardwood granite vaulted skylight barn acreage workshop solar ' +
  'waterfront cul-de-sac townhouse condo loft bungalow craftsman ranch colonial victorian studio duplex porch balcony library cellar'
).split(' ');

/** Mulberry32: tiny, fast, good enough to spread test data. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function generateListing(i: number, rnd: () => number): Listing {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)];
  const place = pick(CITIES);
  const created = Date.UTC(2022, 0, 1) + Math.floor(rnd() * 3 * 365 * 86_400_000);
  const status = pick(listingStatuses);
  const livingArea = 500 + Math.floor(rnd() * 4500);
  const listPrice = 50_000 + Math.floor(rnd() * 400) * 5_000;
  const description = Array.from({ length: 25 + Math.floor(rnd() * 35) }, () => pick(WORDS)).join(' ');
  return {
    id: `lst_bench${i.toString(36).padStart(8, '0')}`,
    status,
    pricing: { listPrice, currency: 'USD', pricePerArea: Math.round((listPrice / livingArea) * 100) / 100 },
    propertyDetails: {
      propertyType: pick(propertyTypes),
      bedrooms: Math.floor(rnd() * 7),
      bathrooms: Math.floor(rnd() * 16) / 4,
      livingArea,
      livingAreaUnits: 'sqft',
      description,
      features: [pick(WORDS), pick(WORDS)],
    },
    location: {
      address: {
        street: `${1 + Math.floor(rnd() * 9000)} ${pick(WORDS)} St`,
        city: place.city,
        stateOrProvince: place.state,
        postalCode: String(10000 + Math.floor(rnd() * 89999)),
        country: 'US',
      },
      latitude: place.lat + (rnd() - 0.5) * 0.6,
      longitude: place.lng + (rnd() - 0.5) * 0.6,
    },
    media: { photoCount: 0, primaryPhoto: null, virtualTours: [], photosChangedAt: null },
    listedAt:
      status === 'coming_soon' || status === 'active' || rnd() < 0.7
        ? new Date(created + 86_400_000).toISOString()
        : null,
    version: 1,
    createdAt: new Date(created).toISOString(),
    updatedAt: new Date(created + Math.floor(rnd() * 90 * 86_400_000)).toISOString(),
  };
}
