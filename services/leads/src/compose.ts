import type { Bus } from '@estate/bus';
import type { DocumentStore } from '@estate/store';
import type { Logger } from 'pino';
import type { LeadsRuntime } from './app';

export async function composeLeads(_deps: { store: DocumentStore; bus: Bus; log: Logger }): Promise<LeadsRuntime> {
  return { async start() {}, async stop() {} };
}
