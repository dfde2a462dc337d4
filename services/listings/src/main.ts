import { exitOnStartFailure, runServiceProcess } from '@estate/platform/process';
import { listingsApp } from './app';
import { composeListings } from './compose';
import { loadConfig } from './config';

runServiceProcess({
  service: 'listings',
  title: 'Listings service',
  loadConfig,
  compose: composeListings,
  register: (app, runtime) => app.register(listingsApp, { service: runtime.service }),
}).catch(exitOnStartFailure);
