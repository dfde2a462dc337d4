export { mediaApp } from './app';
export { composeMedia, defaultMediaOptions, renderThreads, type MediaOptions, type MediaRuntime } from './compose';
export { MediaService } from './media.service';
export { MediaProcessingService } from './media-processing.service';
export { DEFAULT_MAX_PIXELS } from './image.rules';
export { renderImage } from './repositories/image.processor';
