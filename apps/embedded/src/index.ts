export { composeEmbedded, type EmbeddedProduct } from './compose';
export { loadConfig, type EmbeddedConfig } from './config';
