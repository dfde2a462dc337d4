import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors';

/** `ETag: "<version>"` on every answer that carries a versioned resource. */
export function setEtag(reply: FastifyReply, version: number): void {
  reply.header('etag', `"${version}"`);
}

/** Answers a versioned resource with its `ETag`. */
export function withEtag<T extends { version: number }>(reply: FastifyReply, resource: T): T {
  setEtag(reply, resource.version);
  return resource;
}

/** The version an `If-Match` header asks for; undefined when absent or `*`. */
export function ifMatchVersion(request: FastifyRequest): number | undefined {
  const raw = request.headers['if-match'];
  if (raw === undefined || raw.trim() === '*') return undefined;
  const match = /^\s*(?:W\/)?"?(\d{1,15})"?\s*$/.exec(raw);
  if (!match) throw new AppError('malformed_request', 'If-Match must be an ETag this API issued, such as "3"');
  return Number(match[1]);
}
