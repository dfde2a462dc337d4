export { composeEmbedded, storeFile, type EmbeddedProduct } from './compose';
export { loadConfig, type EmbeddedConfig } from './config';
