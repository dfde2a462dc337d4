// The port and its helpers. Adapters are imported by their own path (`@estate/search/memory-listing.index`,
// `@estate/search/sqlite-listing.index`, `@estate/search/elasticsearch-listing.index`) and only where a process is composed.
export * from './listing-index';
export {
  arcDistanceMetres,
  distanceKm,
  filterKey,
  projectListing,
  tokenize,
  SQFT_PER_SQM,
  type ListingFields,
} from './listing-projection';
