import type { IndexedListing } from './listing-index';

/**
 * What both adapters index for a listing, computed once here so that neither engine derives a
 * value on its own (case folding, unit conversion, the full-text string): identical inputs are
 * what makes their answers identical.
 */
export interface ListingFields {
  listingId: string;
  accountId: string;
  version: number;
  status: string;
  propertyType: string;
  /** As written, for the city facet. */
  city: string;
  /** Lower-cased, for the equality filters. */
  cityKey: string;
  stateKey: string;
  postalKey: string;
  source?: string;
  externalId?: string;
  listPrice: number;
  bedrooms?: number;
  bathrooms?: number;
  livingAreaSqft?: number;
  location?: { lat: number; lon: number };
  /** Epoch milliseconds. */
  listedAt?: number;
  updatedAt: number;
  createdAt: number;
  /** Description, address and features: what `q` searches. */
  searchText: string;
}

export const SQFT_PER_SQM = 10.763910416709722;

/** How filter values and indexed keys are compared: whole value, case ignored. */
export const filterKey = (value: string): string => value.trim().toLowerCase();

const millis = (iso: string): number => Date.parse(iso);

/** Elasticsearch's mean Earth radius for arc distances (metres). */
export const EARTH_RADIUS_M = 6_371_008.7714;

/** Great-circle distance by the haversine formula, as Elasticsearch's `arc` distance computes it. */
export function arcDistanceMetres(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const rad = Math.PI / 180;
  const dLat = (lat2 - lat1) * rad;
  const dLon = (lon2 - lon1) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(lat1 * rad) * Math.cos(lat2 * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** What every adapter reports as a hit's `distanceKm`: the same number whichever engine found it. */
export const distanceKm = (near: { lat: number; lng: number }, at: { lat: number; lon: number }): number =>
  arcDistanceMetres(near.lat, near.lng, at.lat, at.lon) / 1000;

export function projectListing({ accountId, listing }: IndexedListing): ListingFields {
  const { address } = listing.location;
  const details = listing.propertyDetails;
  const fields: ListingFields = {
    listingId: listing.id,
    accountId,
    version: listing.version,
    status: listing.status,
    propertyType: details.propertyType,
    city: address.city,
    cityKey: filterKey(address.city),
    stateKey: filterKey(address.stateOrProvince),
    postalKey: filterKey(address.postalCode),
    listPrice: listing.pricing.listPrice,
    updatedAt: millis(listing.updatedAt),
    createdAt: millis(listing.createdAt),
    searchText: [
      details.description,
      address.street,
      address.unit,
      address.city,
      address.stateOrProvince,
      address.postalCode,
      ...(details.features ?? []),
    ]
      .filter((part): part is string => typeof part === 'string' && part.length > 0)
      .join('\n'),
  };
  if (listing.source !== undefined) fields.source = listing.source;
  if (listing.externalId !== undefined) fields.externalId = listing.externalId;
  if (details.bedrooms !== undefined) fields.bedrooms = details.bedrooms;
  if (details.bathrooms !== undefined) fields.bathrooms = details.bathrooms;
  if (details.livingArea !== undefined)
    fields.livingAreaSqft = details.livingAreaUnits === 'sqm' ? details.livingArea * SQFT_PER_SQM : details.livingArea;
  if (listing.location.latitude !== undefined && listing.location.longitude !== undefined) {
    fields.location = { lat: listing.location.latitude, lon: listing.location.longitude };
  }
  if (listing.listedAt) fields.listedAt = millis(listing.listedAt);
  return fields;
}

const words = new Intl.Segmenter('und', { granularity: 'word' });

/**
 * Words of a text, lower-cased, the way Elasticsearch's `standard` analyzer cuts them: both follow
 * Unicode word boundaries (UAX #29), so `open-plan` is two words and `family's`, `3.5` and `1,850` one.
 */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  for (const segment of words.segment(text)) if (segment.isWordLike) out.push(segment.segment.toLowerCase());
  return out;
}
