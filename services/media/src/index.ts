export { mediaApp } from './app';
export { composeMedia, defaultMediaOptions, type MediaOptions, type MediaRuntime } from './compose';
export { ListingsClient, type ListingFound, type ListingLookup } from './clients/listings.client';
