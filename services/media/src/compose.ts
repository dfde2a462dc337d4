import type { Bus } from '@estate/bus';
import type { DocumentStore } from '@estate/store';
import type { Logger } from 'pino';
import type { MediaRuntime } from './app';

export async function composeMedia(_deps: { store: DocumentStore; bus: Bus; log: Logger }): Promise<MediaRuntime> {
  return { async start() {}, async stop() {} };
}
