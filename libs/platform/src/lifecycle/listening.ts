import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';

/** What a process tells the process that started it once it listens (see `announceListening`). */
export interface ListeningMessage {
  type: 'listening';
  url: string;
}

/**
 * The URL a listening app answers on, with the port it was given: with `PORT=0` the system chooses the port,
 * so the configuration does not know it.
 */
export function listeningUrl(app: FastifyInstance, host: string): string {
  const { port } = app.server.address() as AddressInfo;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Tells the process that started this one where it listens, when that process opened an IPC channel (a
 * supervisor, a test harness): a port chosen by the system is known to no one else, and a port picked free by
 * the parent and bound later by the child may be taken by another process in between.
 */
export function announceListening(url: string): void {
  const message: ListeningMessage = { type: 'listening', url };
  // A parent gone already is no reason to stop serving: the error is dropped rather than raised on `process`.
  process.send?.(message, undefined, undefined, () => undefined);
}
