export { leadsApp } from './app';
export { composeLeads, type LeadsRuntime } from './compose';
