import { GridFsBlobStore } from '@estate/blobs';
import { exitOnStartFailure, runServiceProcess } from '@estate/platform/process';
import { mediaApp } from './app';
import { composeMedia } from './compose';
import { loadConfig } from './config';

runServiceProcess({
  service: 'media',
  title: 'Media service',
  loadConfig,
  compose: async ({ store, bus, log, config }) => {
    // Files live in GridFS in the service's own database.
    const blobs = await GridFsBlobStore.connect(config.mongodbUrl, { dbName: config.mongodbDatabase, log });
    const runtime = await composeMedia({ store, bus, blobs, log, options: config.media });
    return {
      ...runtime,
      async stop() {
        await runtime.stop();
        await blobs.close();
      },
    };
  },
  register: (app, runtime) => app.register(mediaApp, { runtime }),
}).catch(exitOnStartFailure);
