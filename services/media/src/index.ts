export { mediaApp, type MediaRuntime } from './app';
export { composeMedia } from './compose';
