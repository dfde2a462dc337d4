import { GridFsBlobStore } from '@estate/blobs/gridfs.blob-store';
import { runServiceProcess } from '@estate/runtime';
import { mediaApp } from './app';
import { ListingsClient } from './clients/listings.client';
import { composeMedia } from './compose';
import { loadConfig } from './config';

void runServiceProcess({
  service: 'media',
  title: 'Media service',
  loadConfig,
  compose: async ({ store, bus, units, log, config }) => {
    // Files live in GridFS in the service's own database.
    const blobs = await GridFsBlobStore.connect(config.mongodb.url, { dbName: config.mongodb.database, log });
    const listings = new ListingsClient({ listingsUrl: config.listingsUrl, signingSecret: config.signingSecret });
    const runtime = await composeMedia({
      store,
      bus,
      units,
      queue: 'shared',
      blobs,
      listings,
      log,
      options: config.media,
    });
    return {
      ...runtime,
      async stop() {
        await runtime.stop();
        await blobs.close();
      },
    };
  },
  app: mediaApp,
});
