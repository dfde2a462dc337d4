export * from './listing-index';
export { filterKey, projectListing, tokenize, SQFT_PER_SQM, type ListingFields } from './listing-projection';
export { MemoryListingIndex } from './memory-listing.index';
export { ElasticsearchListingIndex, type ElasticsearchListingIndexOptions } from './elasticsearch-listing.index';
