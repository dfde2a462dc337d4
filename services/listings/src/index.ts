export { listingsApp } from './app';
export { composeListings, type ListingsRuntime } from './compose';
export { ListingsService } from './listings.service';
export { reindexListings, type ReindexReport } from './search/search-reindex';
