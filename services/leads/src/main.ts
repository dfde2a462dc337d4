import { runServiceProcess } from '@estate/runtime';
import { leadsApp } from './app';
import { composeLeads } from './compose';
import { loadConfig } from './config';

void runServiceProcess({ service: 'leads', title: 'Leads service', loadConfig, compose: composeLeads, app: leadsApp });
