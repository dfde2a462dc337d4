export { mediaApp } from './app';
export { composeMedia, defaultMediaOptions, type MediaOptions, type MediaRuntime } from './compose';
export { ListingsClient, type ListingFound, type ListingLookup } from './clients/listings.client';
export { renderImage, type RenditionOutput } from './repositories/image-renderer.repository';
export { DEFAULT_MAX_PIXELS, DEFAULT_RENDER_TIMEOUT_SECONDS } from './image.rules';
