export { mediaApp } from './app';
export { composeMedia, defaultMediaOptions, type MediaOptions, type MediaRuntime } from './compose';
