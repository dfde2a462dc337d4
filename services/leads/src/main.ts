import { exitOnStartFailure, runServiceProcess } from '@estate/platform/process';
import { leadsApp } from './app';
import { composeLeads } from './compose';
import { loadConfig } from './config';

runServiceProcess({
  service: 'leads',
  title: 'Leads service',
  loadConfig,
  compose: composeLeads,
  register: (app, runtime) => app.register(leadsApp, { runtime }),
}).catch(exitOnStartFailure);
