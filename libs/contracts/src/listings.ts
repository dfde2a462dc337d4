import { z } from 'zod';
import { commaList, isoDateTime, mergePatchOf, page, pageQuery, single, sortParam } from './common';
import { examples } from './examples';

/** RESO StandardStatus, snake_case. */
export const listingStatuses = [
  'coming_soon',
  'active',
  'active_under_contract',
  'pending',
  'closed',
  'withdrawn',
  'expired',
  'canceled',
  'hold',
] as const;
export const listingStatus = z.enum(listingStatuses);
export type ListingStatus = z.infer<typeof listingStatus>;

/** RESO PropertyType, snake_case. */
export const propertyTypes = [
  'residential',
  'residential_income',
  'residential_lease',
  'land',
  'farm',
  'commercial_sale',
  'commercial_lease',
  'business_opportunity',
  'manufactured_in_park',
] as const;
export const propertyType = z.enum(propertyTypes);
export type PropertyType = z.infer<typeof propertyType>;

export const areaUnits = z.enum(['sqft', 'sqm']);

const amount = z.number().positive().max(1e12);
const text = (max: number) => z.string().trim().min(1).max(max);

export const pricingInput = z.strictObject({
  listPrice: amount.describe('Asking price, > 0'),
  currency: z
    .string()
    .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as USD')
    .default('USD'),
  originalListPrice: amount.optional(),
  closePrice: amount.optional(),
});

export const propertyDetailsInput = z.strictObject({
  propertyType,
  propertySubType: text(64).optional(),
  bedrooms: z.number().int().min(0).max(1000).optional(),
  bathrooms: z.number().min(0).max(1000).multipleOf(0.25).optional(),
  livingArea: z.number().positive().max(1e9).optional(),
  livingAreaUnits: areaUnits.default('sqft'),
  lotSize: z.number().positive().max(1e12).optional(),
  yearBuilt: z.number().int().min(1000).max(2100).optional(),
  description: z.string().trim().max(20_000).optional(),
  features: z.array(text(100)).max(200).optional(),
});

export const addressInput = z.strictObject({
  street: text(200),
  unit: text(50).nullable().optional(),
  city: text(100),
  stateOrProvince: text(100),
  postalCode: text(20),
  country: z
    .string()
    .regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 code such as US')
    .default('US'),
});

export const locationInput = z.strictObject({
  address: addressInput,
  latitude: z.number().min(-90).max(90).optional(),
  longitude: z.number().min(-180).max(180).optional(),
});

const listingInputShape = {
  externalId: text(128).optional().describe("The feed's own key; unique per account together with `source`"),
  source: text(64).optional().describe('The feed or system the listing comes from'),
  mlsNumber: text(64).optional(),
  status: listingStatus.default('active'),
  listedAt: isoDateTime
    .optional()
    .describe(
      'When the listing went on the market; set automatically when the status first becomes active or coming_soon',
    ),
  pricing: pricingInput,
  propertyDetails: propertyDetailsInput,
  location: locationInput,
};

function externalKeyComplete(v: { externalId?: string | null; source?: string | null }, ctx: z.RefinementCtx) {
  if (!!v.externalId !== !!v.source) {
    ctx.addIssue({
      code: 'custom',
      path: [v.externalId ? 'source' : 'externalId'],
      message: '`externalId` and `source` go together',
    });
  }
}

/** The writable fields of a listing, as a create body. */
export const listingInputObject = z.strictObject(listingInputShape);
export const listingCreate = listingInputObject
  .superRefine(externalKeyComplete)
  // The same rule in the document: JSON Schema says it directly, zod has no keyword for it.
  .meta({
    id: 'ListingCreate',
    examples: [examples.listingCreate],
    dependentRequired: { externalId: ['source'], source: ['externalId'] },
  });
export type ListingCreate = z.infer<typeof listingCreate>;
export type ListingInput = z.input<typeof listingCreate>;

/** JSON merge patch over the writable fields. */
export const listingPatch = mergePatchOf(listingInputObject).meta({
  id: 'ListingPatch',
  examples: [examples.listingPatch],
});
export type ListingPatch = z.infer<typeof listingPatch>;

export const photoUrls = z.object({ original: z.string(), large: z.string(), thumb: z.string() });

export const listingMediaSummary = z.object({
  photoCount: z.number().int(),
  primaryPhoto: z.object({ id: z.string(), urls: photoUrls, caption: z.string().nullable().optional() }).nullable(),
  virtualTours: z.array(z.object({ id: z.string(), url: z.string(), caption: z.string().nullable().optional() })),
});
export type ListingMediaSummary = z.infer<typeof listingMediaSummary>;

/** The listing's media: the media service's summary, and when the photos shown last changed. */
export const listingMedia = listingMediaSummary.extend({
  photosChangedAt: z
    .string()
    .nullable()
    .default(null)
    .describe(
      'When the photos or tours shown last changed (one became ready, a caption, the order or the primary photo ' +
        'changed, one was deleted); null when they have not changed since this field was introduced',
    ),
});
export type ListingMedia = z.infer<typeof listingMedia>;

export const emptyMediaSummary: ListingMedia = {
  photoCount: 0,
  primaryPhoto: null,
  virtualTours: [],
  photosChangedAt: null,
};

export const listing = z
  .object({
    id: z.string(),
    externalId: z.string().optional(),
    source: z.string().optional(),
    mlsNumber: z.string().optional(),
    status: listingStatus,
    pricing: z.object({
      listPrice: z.number(),
      currency: z.string(),
      originalListPrice: z.number().optional(),
      closePrice: z.number().optional(),
      pricePerArea: z.number().nullable().describe("listPrice / livingArea, in the listing's area unit"),
    }),
    propertyDetails: z.object({
      propertyType,
      propertySubType: z.string().optional(),
      bedrooms: z.number().optional(),
      bathrooms: z.number().optional(),
      livingArea: z.number().optional(),
      livingAreaUnits: areaUnits,
      lotSize: z.number().optional(),
      yearBuilt: z.number().optional(),
      description: z.string().optional(),
      features: z.array(z.string()).optional(),
    }),
    location: z.object({
      address: z.object({
        street: z.string(),
        unit: z.string().nullable().optional(),
        city: z.string(),
        stateOrProvince: z.string(),
        postalCode: z.string(),
        country: z.string(),
      }),
      latitude: z.number().optional(),
      longitude: z.number().optional(),
    }),
    media: listingMedia,
    listedAt: z.string().nullable(),
    sourceMissing: z
      .object({
        feedId: z.string(),
        since: z.string().describe('When a key reconciliation first found it missing from the feed'),
        runs: z.number().int().describe('Key reconciliations in a row that found it missing'),
        runId: z.string().describe('The run that last found it missing'),
        reason: z
          .enum(['missing', 'hidden'])
          .optional()
          .describe(
            '`missing`: a key reconciliation did not find it; `hidden`: the source flagged the record as not for display (`MlgCanView` false)',
          ),
      })
      .nullable()
      .optional()
      .describe(
        'Set while the feed that syncs the listing no longer has it, or flags it as not for display: hidden from search, deleted after `removals.quarantineRuns` reconciliations',
      ),
    version: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Listing', examples: [examples.listing] });
export type Listing = z.infer<typeof listing>;

export const listingSortFields = ['listPrice', 'listedAt', 'updatedAt', 'createdAt'] as const;
export type ListingSortField = (typeof listingSortFields)[number];
/** Search orders: the fields, and `distance` from `near`'s point. */
export const listingSearchSorts = [...listingSortFields, 'distance'] as const;

/** Fields `?facets=` can count. */
export const listingFacets = ['status', 'propertyType', 'city'] as const;
export type ListingFacet = (typeof listingFacets)[number];

/** Half the Earth's circumference: every point is within this distance of any other. */
const MAX_RADIUS_KM = 20_038;

/** A comma-separated list of exactly `names.length` numbers, each within its bounds. */
function numberTuple<const K extends readonly string[]>(
  names: K,
  bounds: Record<K[number], [number, number]>,
  example: string,
) {
  const number = '\\s*-?[0-9]+(\\.[0-9]+)?\\s*';
  // The pattern documents the shape for clients and generators; the transform checks it and the bounds.
  const pattern = `^${number}(,${number}){${names.length - 1}}$`;
  return z
    .string()
    .meta({ pattern })
    .transform((raw, ctx) => {
      const parts = raw.split(',').map((p) => p.trim());
      const values = parts.map(Number);
      if (parts.length !== names.length || parts.some((p) => p === '') || values.some((v) => !Number.isFinite(v))) {
        ctx.addIssue({
          code: 'custom',
          message: `must be ${names.length} numbers separated by commas (${names.join(',')}), e.g. ${example}`,
        });
        return z.NEVER;
      }
      const out = {} as Record<K[number], number>;
      names.forEach((name: K[number], i) => {
        const [min, max] = bounds[name];
        if (values[i] < min || values[i] > max)
          ctx.addIssue({ code: 'custom', message: `${name} must be between ${min} and ${max}` });
        out[name] = values[i];
      });
      return out;
    });
}

const latitude: [number, number] = [-90, 90];
const longitude: [number, number] = [-180, 180];

export const listingSearchQuery = z
  .strictObject({
    ...pageQuery,
    sort: sortParam(listingSearchSorts).describe(
      'One of `listPrice`, `listedAt`, `updatedAt`, `createdAt`, `distance` (with `near`), `-` prefix for descending. Default: relevance with `q`, nearest first with `near`, otherwise `-createdAt`. Ties are ordered by id.',
    ),
    q: single(z.string().trim().min(1).max(200).optional()).describe(
      'Full text over description, address and features; every word must match. Ordered by relevance (BM25) unless `sort` is given; the embedded profile ranks the newest 2,000 matches first, then the 2,000 before them, and so on',
    ),
    status: commaList(listingStatus),
    propertyType: commaList(propertyType),
    city: single(z.string().trim().min(1).max(100).optional()).describe('Whole city name, case ignored'),
    stateOrProvince: single(z.string().trim().min(1).max(100).optional()),
    postalCode: single(z.string().trim().min(1).max(20).optional()),
    source: single(z.string().trim().min(1).max(64).optional()),
    externalId: single(z.string().trim().min(1).max(128).optional()),
    minPrice: single(z.coerce.number().min(0).optional()),
    maxPrice: single(z.coerce.number().min(0).optional()),
    minBedrooms: single(z.coerce.number().int().min(0).optional()),
    minBathrooms: single(z.coerce.number().min(0).optional()),
    minLivingArea: single(z.coerce.number().min(0).optional()).describe(
      'Square feet (listings measured in square metres are converted)',
    ),
    updatedSince: single(isoDateTime.optional()).describe('Listings changed at or after this instant (ISO 8601)'),
    near: single(
      numberTuple(['lat', 'lng'] as const, { lat: latitude, lng: longitude }, '30.27,-97.74').optional(),
    ).describe('`lat,lng`; needs `radiusKm`'),
    radiusKm: single(z.coerce.number().min(0.001).max(MAX_RADIUS_KM).optional()).describe(
      'Distance from `near`, in kilometres',
    ),
    bbox: single(
      numberTuple(
        ['minLng', 'minLat', 'maxLng', 'maxLat'] as const,
        { minLng: longitude, minLat: latitude, maxLng: longitude, maxLat: latitude },
        '-97.8,30.2,-97.7,30.3',
      ).optional(),
    ).describe('`minLng,minLat,maxLng,maxLat`; a box with minLng > maxLng crosses the antimeridian'),
    facets: commaList(z.enum(listingFacets)).describe('Count matches by `status`, `propertyType`, `city`'),
  })
  .superRefine((query, ctx) => {
    if (query.minPrice !== undefined && query.maxPrice !== undefined && query.minPrice > query.maxPrice) {
      ctx.addIssue({ code: 'custom', path: ['minPrice'], message: 'must not be above maxPrice' });
    }
    if (query.radiusKm !== undefined && !query.near)
      ctx.addIssue({ code: 'custom', path: ['radiusKm'], message: 'needs near=lat,lng' });
    if (query.near && query.radiusKm === undefined)
      ctx.addIssue({ code: 'custom', path: ['radiusKm'], message: 'is required with near' });
    if (query.sort?.replace(/^-/, '') === 'distance' && !query.near)
      ctx.addIssue({ code: 'custom', path: ['sort'], message: 'distance needs near=lat,lng' });
    if (query.bbox && query.bbox.minLat > query.bbox.maxLat)
      ctx.addIssue({ code: 'custom', path: ['bbox'], message: 'minLat must not be above maxLat' });
  });
export type ListingSearchQuery = z.infer<typeof listingSearchQuery>;

export const facetCount = z.object({ value: z.string(), count: z.number().int() });

/** A listing found by a search, with its distance from `near`'s point when the search has one. */
export const listingHit = listing
  .extend({
    distanceKm: z
      .number()
      .optional()
      .describe('Kilometres from the `near` point (great-circle), present when the search has `near`'),
  })
  .meta({ id: 'ListingHit' });
export type ListingHit = z.infer<typeof listingHit>;

export const listingPage = page(listingHit)
  .extend({
    facets: z
      .object({
        status: z.array(facetCount).optional(),
        propertyType: z.array(facetCount).optional(),
        city: z.array(facetCount).optional(),
      })
      .optional()
      .describe('With `?facets=`: counts over every match, most frequent first, at most 50 values each'),
  })
  .meta({ id: 'ListingPage' });
export type ListingPage = z.infer<typeof listingPage>;
