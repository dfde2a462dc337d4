export { listingsApp } from './app';
export { composeListings, reindexListings, type ListingsDeps, type ListingsRuntime } from './compose';
export { ListingsService } from './listings.service';
export { type ReindexReport } from './reindex.service';
export { ListingRepository, type ListingDoc } from './repositories/listing.repository';
