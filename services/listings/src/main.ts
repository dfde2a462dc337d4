import { exitOnStartFailure, runServiceProcess } from '@estate/platform/process';
import { ElasticsearchListingIndex } from '@estate/search';
import { listingsApp } from './app';
import { composeListings } from './compose';
import { loadConfig } from './config';

runServiceProcess({
  service: 'listings',
  title: 'Listings service',
  loadConfig,
  compose: ({ config, ...deps }) =>
    composeListings({ ...deps, index: ElasticsearchListingIndex.connect(config.elasticsearchUrl, { alias: config.elasticsearchIndex, log: deps.log }) }),
  register: (app, runtime) => app.register(listingsApp, { service: runtime.service, bulk: runtime.bulk }),
  // A bulk call of 100 listings with long descriptions is well over the 1 MB default.
  bodyLimit: 5 * 1024 * 1024,
}).catch(exitOnStartFailure);
