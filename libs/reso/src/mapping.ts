import type { Listing } from '@estate/contracts/listings';
import type { Media } from '@estate/contracts/media';
import { DD_ENUMS, DD_FIELDS } from './dd.generated';

/**
 * The one mapping between our contracts and RESO Data Dictionary 2.0 (docs/reso.md): every field the RESO Web API
 * serves, its DD name and type, and the path of our contract it comes from. `$metadata`, the answers, the search
 * index's RESO columns and (read backwards: `fromReso`) the feed import all follow this table. Names starting `X_` are
 * local fields for what DD lacks.
 */

export const ENTITY_NAMESPACE = 'org.reso.metadata';
export const ENUM_NAMESPACE = 'org.reso.metadata.enums';

export type PrimitiveType =
  'Edm.String' | 'Edm.Int64' | 'Edm.Decimal' | 'Edm.Boolean' | 'Edm.Date' | 'Edm.DateTimeOffset';

export type ResoValue = string | number | boolean | null;

export interface FieldType {
  /** An `Edm.*` type, or the name of an enumeration of `org.reso.metadata.enums`. */
  type: PrimitiveType | { enum: string };
  collection?: boolean;
  maxLength?: number;
  precision?: number;
  scale?: number;
}

export interface FieldMapping<S> extends FieldType {
  name: string;
  /** Our contract's field (a dotted path of the source), for the documentation and the inverse. */
  path: string;
  read: (source: S) => ResoValue | readonly string[] | undefined;
  /** The value for our contract, from a RESO value (undefined: this field does not set one); derived fields have none. */
  fromReso?: (value: unknown) => unknown;
  /** Filterable and sortable through the search index (Property only). */
  indexed?: boolean;
  /** Never null: lets keyset pages use plain comparisons. */
  required?: boolean;
}

const ddField = (resource: keyof typeof DD_FIELDS, name: string): FieldType => {
  const def = (
    DD_FIELDS[resource] as Record<string, { Type: string; MaxLength?: string; Precision?: string; Scale?: string }>
  )[name];
  if (!def) throw new Error(`${resource}.${name} is not a Data Dictionary field we extracted`);
  const collection = def.Type.startsWith('Collection(');
  const bare = def.Type.replace(/^Collection\((.*)\)$/, '$1');
  const type: FieldType['type'] = bare.startsWith(`${ENUM_NAMESPACE}.`)
    ? { enum: bare.slice(ENUM_NAMESPACE.length + 1) }
    : (bare as PrimitiveType);
  return {
    type,
    ...(collection ? { collection } : {}),
    ...(def.MaxLength ? { maxLength: Number(def.MaxLength) } : {}),
    ...(def.Precision ? { precision: Number(def.Precision) } : {}),
    ...(def.Scale ? { scale: Number(def.Scale) } : {}),
  };
};

/** Members of a DD enumeration by their normalised name or standard name ("Accessible Approach with Ramp"). */
const normalise = (text: string): string => text.toLowerCase().replace(/[^a-z0-9]/g, '');

export function enumMembers(name: string): ReadonlyArray<readonly [string, string]> {
  const members = DD_ENUMS[name];
  if (!members) throw new Error(`${name} is not an enumeration we extracted`);
  return members;
}

function memberLookup(name: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [member, standard] of enumMembers(name)) {
    out.set(normalise(member), member);
    out.set(normalise(standard), member);
  }
  return out;
}

/** A two-way value map between our enumeration and a DD enumeration (every one of ours must be a DD member). */
function enumCodec<T extends string>(ddEnum: string, ours: Record<T, string>) {
  const members = new Set(enumMembers(ddEnum).map(([m]) => m));
  for (const member of Object.values<string>(ours))
    if (!members.has(member)) throw new Error(`${member} is not a member of ${ddEnum}`);
  const back = new Map(Object.entries<string>(ours).map(([k, v]) => [v, k]));
  return {
    to: (value: T | undefined): string | undefined => (value === undefined ? undefined : ours[value]),
    from: (value: unknown): string | undefined => (typeof value === 'string' ? back.get(value) : undefined),
  };
}

const STATUS = enumCodec('StandardStatus', {
  coming_soon: 'ComingSoon',
  active: 'Active',
  active_under_contract: 'ActiveUnderContract',
  pending: 'Pending',
  closed: 'Closed',
  withdrawn: 'Withdrawn',
  expired: 'Expired',
  canceled: 'Canceled',
  hold: 'Hold',
});
const PROPERTY_TYPE = enumCodec('PropertyType', {
  residential: 'Residential',
  residential_income: 'ResidentialIncome',
  residential_lease: 'ResidentialLease',
  land: 'Land',
  farm: 'Farm',
  commercial_sale: 'CommercialSale',
  commercial_lease: 'CommercialLease',
  business_opportunity: 'BusinessOpportunity',
  manufactured_in_park: 'ManufacturedInPark',
});
const AREA_UNITS = enumCodec('AreaUnits', { sqft: 'SquareFeet', sqm: 'SquareMeters' });

/** Our free-text sub-types that DD spells otherwise; any other text matches a member by its normalised name. */
const SUB_TYPE_ALIASES: Record<string, string> = {
  singlefamily: 'SingleFamilyResidence',
  condo: 'Condominium',
  multifamily: 'MultiFamily',
  mobile: 'MobileHome',
  manufactured: 'ManufacturedHome',
};
const subTypes = memberLookup('PropertySubType');
const subTypeOf = (text: string | undefined): string | undefined =>
  text === undefined ? undefined : (SUB_TYPE_ALIASES[normalise(text)] ?? subTypes.get(normalise(text)));

/** The DD enumeration collections our free-text `features` fill, each feature in every one it names a member of. */
export const FEATURE_COLLECTIONS = {
  InteriorFeatures: memberLookup('InteriorOrRoomFeatures'),
  ExteriorFeatures: memberLookup('ExteriorFeatures'),
  AccessibilityFeatures: memberLookup('AccessibilityFeatures'),
} as const;

const featuresIn = (lookup: Map<string, string>, features: readonly string[] | undefined): string[] => {
  const out = new Set<string>();
  for (const feature of features ?? []) {
    const member = lookup.get(normalise(feature));
    if (member) out.add(member);
  }
  return [...out];
};
const standardNames = new Map<string, string>(
  ['InteriorOrRoomFeatures', 'ExteriorFeatures', 'AccessibilityFeatures'].flatMap((e) =>
    enumMembers(e).map(([member, standard]): [string, string] => [member, standard]),
  ),
);

/** `3106 Riverside St` -> number `3106`, name `Riverside St` (no leading number: all of it is the name). */
export function splitStreet(street: string): { number?: string; name: string } {
  const match = /^\s*(\d+[A-Za-z]?(?:-\d+)?)\s+(.+)$/.exec(street);
  return match ? { number: match[1], name: match[2].trim() } : { name: street.trim() };
}

/** The UTC calendar date of a timestamp. */
const dateOf = (iso: string | null | undefined): string | undefined =>
  iso ? new Date(iso).toISOString().slice(0, 10) : undefined;
const numberOrUndefined = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);
const stringOrUndefined = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

type PropertyRow = Omit<FieldMapping<Listing>, keyof FieldType> & Partial<FieldType>;

/** Builds a row with the DD definition of its name (or the given type for `X_` fields). */
function rows<S>(
  resource: keyof typeof DD_FIELDS,
  list: ReadonlyArray<Omit<FieldMapping<S>, keyof FieldType> & Partial<FieldType>>,
) {
  return list.map((row): FieldMapping<S> => {
    const local = row.name.startsWith('X_');
    if (local && !row.type) throw new Error(`${row.name} needs a type`);
    return { ...(local ? {} : ddField(resource, row.name)), ...row } as FieldMapping<S>;
  });
}

export const PROPERTY_FIELDS: readonly FieldMapping<Listing>[] = rows<Listing>('Property', [
  { name: 'ListingKey', path: 'id', read: (l) => l.id, indexed: true, required: true },
  { name: 'ListingId', path: 'mlsNumber', read: (l) => l.mlsNumber, fromReso: stringOrUndefined, indexed: true },
  {
    name: 'OriginatingSystemName',
    path: 'source',
    read: (l) => l.source,
    fromReso: stringOrUndefined,
    indexed: true,
  },
  {
    name: 'OriginatingSystemKey',
    path: 'externalId',
    read: (l) => l.externalId,
    fromReso: stringOrUndefined,
    indexed: true,
  },
  {
    name: 'StandardStatus',
    path: 'status',
    read: (l) => STATUS.to(l.status),
    fromReso: STATUS.from,
    indexed: true,
    required: true,
  },
  {
    name: 'PropertyType',
    path: 'propertyDetails.propertyType',
    read: (l) => PROPERTY_TYPE.to(l.propertyDetails.propertyType),
    fromReso: PROPERTY_TYPE.from,
    indexed: true,
    required: true,
  },
  {
    name: 'PropertySubType',
    path: 'propertyDetails.propertySubType',
    read: (l) => subTypeOf(l.propertyDetails.propertySubType),
    fromReso: (v) => (typeof v === 'string' ? v.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase() : undefined),
    indexed: true,
  },
  {
    name: 'X_PropertySubType',
    type: 'Edm.String',
    maxLength: 64,
    path: 'propertyDetails.propertySubType',
    read: (l) => l.propertyDetails.propertySubType,
    fromReso: stringOrUndefined,
    indexed: true,
  },
  {
    name: 'ListPrice',
    path: 'pricing.listPrice',
    read: (l) => l.pricing.listPrice,
    fromReso: numberOrUndefined,
    indexed: true,
    required: true,
  },
  {
    name: 'X_CurrencyCode',
    type: 'Edm.String',
    maxLength: 3,
    path: 'pricing.currency',
    read: (l) => l.pricing.currency,
    fromReso: stringOrUndefined,
    indexed: true,
  },
  {
    name: 'OriginalListPrice',
    path: 'pricing.originalListPrice',
    read: (l) => l.pricing.originalListPrice,
    fromReso: numberOrUndefined,
    indexed: true,
  },
  {
    name: 'ClosePrice',
    path: 'pricing.closePrice',
    read: (l) => l.pricing.closePrice,
    fromReso: numberOrUndefined,
    indexed: true,
  },
  {
    name: 'BedroomsTotal',
    path: 'propertyDetails.bedrooms',
    read: (l) => l.propertyDetails.bedrooms,
    fromReso: numberOrUndefined,
    indexed: true,
  },
  {
    name: 'BathroomsTotalInteger',
    path: 'propertyDetails.bathrooms',
    // Rooms counted: two full and a half bath are three bathrooms (X_BathroomsTotal keeps the 2.5).
    read: (l) => (l.propertyDetails.bathrooms === undefined ? undefined : Math.ceil(l.propertyDetails.bathrooms)),
    indexed: true,
  },
  {
    name: 'X_BathroomsTotal',
    type: 'Edm.Decimal',
    precision: 6,
    scale: 2,
    path: 'propertyDetails.bathrooms',
    read: (l) => l.propertyDetails.bathrooms,
    fromReso: numberOrUndefined,
    indexed: true,
  },
  {
    name: 'LivingArea',
    path: 'propertyDetails.livingArea',
    read: (l) => l.propertyDetails.livingArea,
    fromReso: numberOrUndefined,
    indexed: true,
  },
  {
    name: 'LivingAreaUnits',
    path: 'propertyDetails.livingAreaUnits',
    read: (l) => AREA_UNITS.to(l.propertyDetails.livingAreaUnits),
    fromReso: AREA_UNITS.from,
    indexed: true,
  },
  {
    name: 'LotSizeSquareFeet',
    path: 'propertyDetails.lotSize',
    read: (l) => l.propertyDetails.lotSize,
    fromReso: numberOrUndefined,
    indexed: true,
  },
  {
    name: 'YearBuilt',
    path: 'propertyDetails.yearBuilt',
    read: (l) => l.propertyDetails.yearBuilt,
    fromReso: numberOrUndefined,
    indexed: true,
  },
  {
    name: 'PublicRemarks',
    path: 'propertyDetails.description',
    read: (l) => l.propertyDetails.description,
    fromReso: stringOrUndefined,
  },
  {
    name: 'UnparsedAddress',
    path: 'location.address.street',
    read: (l) => l.location.address.street,
    fromReso: stringOrUndefined,
    indexed: true,
  },
  {
    name: 'StreetNumber',
    path: 'location.address.street',
    read: (l) => splitStreet(l.location.address.street).number,
    indexed: true,
  },
  {
    name: 'StreetName',
    path: 'location.address.street',
    read: (l) => splitStreet(l.location.address.street).name,
    indexed: true,
  },
  {
    name: 'UnitNumber',
    path: 'location.address.unit',
    read: (l) => l.location.address.unit ?? undefined,
    fromReso: stringOrUndefined,
    indexed: true,
  },
  // DD 2.0 types City, StateOrProvince and Country as lookups; served as string lookups (decision 0101).
  {
    name: 'City',
    type: 'Edm.String',
    maxLength: 100,
    path: 'location.address.city',
    read: (l) => l.location.address.city,
    fromReso: stringOrUndefined,
    indexed: true,
    required: true,
  },
  {
    name: 'StateOrProvince',
    type: 'Edm.String',
    maxLength: 100,
    path: 'location.address.stateOrProvince',
    read: (l) => l.location.address.stateOrProvince,
    fromReso: stringOrUndefined,
    indexed: true,
    required: true,
  },
  {
    name: 'PostalCode',
    maxLength: 20,
    path: 'location.address.postalCode',
    read: (l) => l.location.address.postalCode,
    fromReso: stringOrUndefined,
    indexed: true,
    required: true,
  },
  {
    name: 'Country',
    type: 'Edm.String',
    maxLength: 2,
    path: 'location.address.country',
    read: (l) => l.location.address.country,
    fromReso: stringOrUndefined,
    indexed: true,
    required: true,
  },
  {
    name: 'Latitude',
    path: 'location.latitude',
    read: (l) => l.location.latitude,
    fromReso: numberOrUndefined,
    indexed: true,
  },
  {
    name: 'Longitude',
    path: 'location.longitude',
    read: (l) => l.location.longitude,
    fromReso: numberOrUndefined,
    indexed: true,
  },
  { name: 'OnMarketDate', path: 'listedAt', read: (l) => dateOf(l.listedAt), indexed: true },
  {
    name: 'OnMarketTimestamp',
    path: 'listedAt',
    read: (l) => l.listedAt ?? undefined,
    fromReso: stringOrUndefined,
    indexed: true,
  },
  {
    name: 'OriginalEntryTimestamp',
    path: 'createdAt',
    read: (l) => l.createdAt,
    indexed: true,
    required: true,
  },
  {
    name: 'ModificationTimestamp',
    path: 'updatedAt',
    read: (l) => l.updatedAt,
    indexed: true,
    required: true,
  },
  { name: 'PhotosCount', path: 'media.photoCount', read: (l) => l.media.photoCount, indexed: true, required: true },
  {
    name: 'PhotosChangeTimestamp',
    path: 'media.photosChangedAt',
    read: (l) => l.media.photosChangedAt ?? undefined,
    indexed: true,
  },
  {
    name: 'VirtualTourURLUnbranded',
    path: 'media.virtualTours',
    read: (l) => l.media.virtualTours[0]?.url,
  },
  ...(Object.keys(FEATURE_COLLECTIONS) as Array<keyof typeof FEATURE_COLLECTIONS>).map((name): PropertyRow => ({
    name,
    path: 'propertyDetails.features',
    read: (l) => featuresIn(FEATURE_COLLECTIONS[name], l.propertyDetails.features),
    // Members back to their standard names ("Accessible Approach with Ramp"); merged with X_Features by the reader.
    fromReso: (v) => (Array.isArray(v) ? v.map((m) => standardNames.get(String(m)) ?? String(m)) : undefined),
    indexed: true,
  })),
  {
    name: 'X_Features',
    type: 'Edm.String',
    collection: true,
    maxLength: 100,
    path: 'propertyDetails.features',
    read: (l) => l.propertyDetails.features ?? [],
    fromReso: (v) => (Array.isArray(v) ? v.map(String) : undefined),
    indexed: true,
  },
  {
    name: 'X_Version',
    type: 'Edm.Int64',
    path: 'version',
    read: (l) => l.version,
    indexed: true,
    required: true,
  },
]);

/** A media item with the listing it belongs to and the base of absolute URLs. */
export interface MediaSource {
  media: Media;
  /** `https://api.example.com`: MediaURL is absolute. */
  baseUrl: string;
}

const MEDIA_TYPES: Record<string, string> = { 'image/jpeg': 'Jpeg', 'image/png': 'Png' };

export const MEDIA_FIELDS: readonly FieldMapping<MediaSource>[] = rows<MediaSource>('Media', [
  { name: 'MediaKey', path: 'id', read: ({ media }) => media.id, required: true },
  { name: 'ResourceName', path: '(always Property)', read: () => 'Property', required: true },
  { name: 'ResourceRecordKey', path: 'listingId', read: ({ media }) => media.listingId, required: true },
  {
    name: 'MediaURL',
    path: 'urls.large (images), url (tours)',
    read: ({ media, baseUrl }) => {
      const url = media.kind === 'virtual_tour' ? media.url : media.urls?.large;
      if (!url) return undefined;
      return /^https?:\/\//.test(url) ? url : `${baseUrl}${url}`;
    },
  },
  { name: 'Order', path: 'order', read: ({ media }) => media.order, required: true },
  { name: 'PreferredPhotoYN', path: 'isPrimary', read: ({ media }) => media.isPrimary, required: true },
  {
    name: 'ShortDescription',
    path: 'caption',
    // DD allows 50 characters; LongDescription has the whole caption.
    read: ({ media }) => (media.caption ? media.caption.slice(0, 50) : undefined),
  },
  { name: 'LongDescription', path: 'caption', read: ({ media }) => media.caption ?? undefined },
  { name: 'ImageWidth', path: 'width', read: ({ media }) => media.width ?? undefined },
  { name: 'ImageHeight', path: 'height', read: ({ media }) => media.height ?? undefined },
  {
    name: 'MediaCategory',
    path: 'kind',
    read: ({ media }) => (media.kind === 'virtual_tour' ? 'UnbrandedVirtualTour' : 'Photo'),
    required: true,
  },
  {
    name: 'MediaType',
    path: 'contentType',
    read: ({ media }) => (media.contentType ? MEDIA_TYPES[media.contentType] : undefined),
  },
  {
    name: 'MediaModificationTimestamp',
    path: 'updatedAt',
    read: ({ media }) => media.updatedAt,
    required: true,
  },
  { name: 'ModificationTimestamp', path: 'updatedAt', read: ({ media }) => media.updatedAt, required: true },
]);

/** One event of the account's change feed, as the EntityEvent resource (RCP-027) serves it. */
export interface EntityEventSource {
  sequence: number;
  resourceName: 'Property' | 'Media';
  /** The record's key in its resource: the listing id, or the media id. */
  key: string;
  /** The listing the record is or belongs to. */
  listingKey: string;
  /** The change feed's event type (`listing.created`, `listing.deleted`, `media.ready`, ...). */
  type: string;
  createdAt: string;
  serviceRoot: string;
}

const quoted = (key: string): string => `'${key.replace(/'/g, "''")}'`;

export const ENTITY_EVENT_FIELDS: readonly FieldMapping<EntityEventSource>[] = rows<EntityEventSource>('EntityEvent', [
  { name: 'EntityEventSequence', path: 'seq', read: (e) => e.sequence, indexed: true, required: true },
  { name: 'ResourceName', path: 'type', read: (e) => e.resourceName, required: true },
  { name: 'ResourceRecordKey', path: 'data.id', read: (e) => e.key, required: true },
  {
    name: 'ResourceRecordUrl',
    path: '(the record here)',
    read: (e) =>
      e.resourceName === 'Property'
        ? `${e.serviceRoot}/Property(${quoted(e.key)})`
        : `${e.serviceRoot}/Property(${quoted(e.listingKey)})/Media`,
  },
  {
    name: 'X_EventType',
    type: 'Edm.String',
    maxLength: 32,
    path: 'type',
    read: (e) => e.type,
    required: true,
  },
  {
    name: 'X_EventTimestamp',
    type: 'Edm.DateTimeOffset',
    path: 'createdAt',
    read: (e) => e.createdAt,
    required: true,
  },
]);

export function entityEventRecord(source: EntityEventSource): Record<string, ResoValue | readonly string[]> {
  const out: Record<string, ResoValue | readonly string[]> = {};
  for (const field of ENTITY_EVENT_FIELDS) out[field.name] = field.read(source) ?? null;
  return out;
}

export interface ResourceDefinition {
  name: 'Property' | 'Media' | 'EntityEvent';
  key: string;
  fields: readonly FieldMapping<never>[];
  navigation?: Array<{ name: string; target: string; collection: boolean }>;
}

export const RESOURCES: readonly ResourceDefinition[] = [
  {
    name: 'Property',
    key: 'ListingKey',
    fields: PROPERTY_FIELDS as readonly FieldMapping<never>[],
    navigation: [{ name: 'Media', target: 'Media', collection: true }],
  },
  { name: 'Media', key: 'MediaKey', fields: MEDIA_FIELDS as readonly FieldMapping<never>[] },
  {
    name: 'EntityEvent',
    key: 'EntityEventSequence',
    fields: ENTITY_EVENT_FIELDS as readonly FieldMapping<never>[],
  },
];

export const propertyField = new Map(PROPERTY_FIELDS.map((f) => [f.name, f]));

/** The RESO record of a listing: every Property field, nulls for what the listing lacks. */
export function propertyRecord(listing: Listing): Record<string, ResoValue | readonly string[]> {
  const out: Record<string, ResoValue | readonly string[]> = {};
  for (const field of PROPERTY_FIELDS) out[field.name] = field.read(listing) ?? (field.collection ? [] : null);
  return out;
}

export function mediaRecord(source: MediaSource): Record<string, ResoValue | readonly string[]> {
  const out: Record<string, ResoValue | readonly string[]> = {};
  for (const field of MEDIA_FIELDS) out[field.name] = field.read(source) ?? null;
  return out;
}

/** How the search index holds a field's values: timestamps as epoch milliseconds, the rest as served. */
export type IndexKind = 'string' | 'number' | 'boolean' | 'date' | 'timestamp';

export interface IndexedField {
  name: string;
  kind: IndexKind;
  collection: boolean;
  required: boolean;
}

export function indexKind(field: FieldType): IndexKind {
  if (typeof field.type !== 'string') return 'string';
  switch (field.type) {
    case 'Edm.Int64':
    case 'Edm.Decimal':
      return 'number';
    case 'Edm.Boolean':
      return 'boolean';
    case 'Edm.Date':
      return 'date';
    case 'Edm.DateTimeOffset':
      return 'timestamp';
    case 'Edm.String':
      return 'string';
  }
}

/** The Property fields the search index holds (filters and sorts run on these only). */
export const INDEXED_PROPERTY_FIELDS: readonly IndexedField[] = PROPERTY_FIELDS.filter((f) => f.indexed).map((f) => ({
  name: f.name,
  kind: indexKind(f),
  collection: f.collection ?? false,
  required: f.required ?? false,
}));

/** A listing's values as the search index holds them, by field name (collections as lists, absent as null). */
export function propertyIndexRecord(listing: Listing): Record<string, string | number | boolean | null | string[]> {
  const out: Record<string, string | number | boolean | null | string[]> = {};
  for (const field of INDEXED_PROPERTY_FIELDS) {
    const value = propertyField.get(field.name)!.read(listing);
    if (field.collection) out[field.name] = Array.isArray(value) ? [...(value as string[])] : [];
    else if (value === undefined || value === null) out[field.name] = null;
    else if (field.kind === 'timestamp') out[field.name] = Date.parse(String(value));
    else out[field.name] = value as string | number | boolean;
  }
  return out;
}

const setPath = (target: Record<string, unknown>, path: string, value: unknown): void => {
  const parts = path.split('.');
  let at = target;
  for (const part of parts.slice(0, -1)) at = (at[part] ??= {}) as Record<string, unknown>;
  at[parts[parts.length - 1]] = value;
};

/** Paths the feed import sets itself (the listing's identity) rather than from the record. */
const IDENTITY_PATHS = new Set(['id', 'source', 'externalId', 'version']);

/**
 * A RESO Property record read back into our listing contract (the feed import, SPEC §14): this table read backwards,
 * through each field's `fromReso`. Where several fields fill one of ours, an `X_` field the record carries wins (it
 * is ours exactly), otherwise the first standard one with a value; `features` is the union of the collections. A path
 * no field gives a value is null (a merge patch clears it). Identity (`id`, `source`, `externalId`) is the caller's.
 */
export function listingFromReso(record: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const byPath = new Map<string, FieldMapping<Listing>[]>();
  for (const field of PROPERTY_FIELDS) {
    if (!field.fromReso || IDENTITY_PATHS.has(field.path)) continue;
    byPath.set(field.path, [...(byPath.get(field.path) ?? []), field]);
  }
  for (const [path, fields] of byPath) {
    const valueOf = (f: FieldMapping<Listing>) =>
      record[f.name] === undefined || record[f.name] === null ? undefined : f.fromReso!(record[f.name]);
    const local = fields.find((f) => f.name.startsWith('X_') && valueOf(f) !== undefined);
    let value: unknown;
    if (local) value = valueOf(local);
    else if (fields.some((f) => f.collection)) {
      const all = fields.flatMap((f) => (valueOf(f) as string[] | undefined) ?? []);
      value = all.length > 0 ? [...new Set(all)] : undefined;
    } else value = fields.map(valueOf).find((v) => v !== undefined);
    setPath(out, path, value ?? null);
  }
  return out;
}
