export { leadsApp } from './app';
export { composeLeads, readAgent, type LeadsRuntime } from './compose';
