export { leadsApp, type LeadsRuntime } from './app';
export { composeLeads } from './compose';
