import { runServiceProcess } from '@estate/runtime';
import { leadsApp } from './app';
import { ListingsClient } from './clients/listings.client';
import { composeLeads } from './compose';
import { loadConfig } from './config';

void runServiceProcess({
  service: 'leads',
  title: 'Leads service',
  loadConfig,
  compose: (deps) =>
    composeLeads({
      ...deps,
      // MongoDB indexes the members of the search-token array.
      searchTokenIndex: true,
      listings: new ListingsClient({ listingsUrl: deps.config.listingsUrl, signingSecret: deps.config.signingSecret }),
    }),
  app: leadsApp,
});
