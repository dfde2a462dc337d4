import { runServiceProcess } from '@estate/runtime';
import { ElasticsearchListingIndex } from '@estate/search/elasticsearch-listing.index';
import { listingsApp } from './app';
import { MediaClient } from './clients/media.client';
import { composeListings } from './compose';
import { loadConfig } from './config';

void runServiceProcess({
  service: 'listings',
  title: 'Listings service',
  loadConfig,
  compose: ({ config, ...deps }) => {
    const media = new MediaClient({ mediaUrl: config.mediaUrl, signingSecret: config.signingSecret });
    return composeListings({
      ...deps,
      // JetStream keeps unfinished jobs by itself.
      requeueUnfinishedJobs: false,
      // Elasticsearch may come up after this process.
      waitForSearchEngine: true,
      feeds: config.feeds,
      // RESO's Media reads the galleries; feeds' photos are written to them through the media service's own routes.
      media,
      mediaWriter: media,
      ...(config.publicBaseUrl ? { publicBaseUrl: config.publicBaseUrl } : {}),
      index: ElasticsearchListingIndex.connect(config.elasticsearch.url, {
        alias: config.elasticsearch.index,
        log: deps.log,
      }),
    });
  },
  app: listingsApp,
  // A bulk call of 100 listings with long descriptions is well over the 1 MB default.
  bodyLimit: 5 * 1024 * 1024,
});
