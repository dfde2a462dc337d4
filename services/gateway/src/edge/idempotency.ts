import { createHash } from 'node:crypto';
import { AppError } from '@estate/platform/errors';
import { DuplicateKeyError, type DocumentCollection } from '@estate/store';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { IdempotencyDoc } from '../repositories/idempotency.repository';

const KEEP_MS = 24 * 60 * 60 * 1000;
/** A first request still "running" after this long is taken to have died with its process. */
const STALE_RUNNING_MS = 5 * 60 * 1000;
const REPLAYED_HEADERS = ['content-type', 'location', 'etag'];

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyRecord?: string;
  }
}

function bodyHash(body: unknown): string {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body ?? null));
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * `Idempotency-Key` on POST: the first successful (2xx) answer is kept 24 hours and replayed
 * with its status to a retry; the same key with another body is 422; a retry while the first
 * is still running is 409. Failed attempts are not kept, so a client can fix and retry.
 */
export function installIdempotency(app: FastifyInstance, records: DocumentCollection<IdempotencyDoc>, clock: () => Date): void {
  app.addHook('preHandler', async (request, reply) => {
    const key = request.headers['idempotency-key'];
    if (request.method !== 'POST' || key === undefined || !request.identity) return;
    // Uploads stream through without being read here, so there is no body to fingerprint.
    if (request.headers['content-type']?.startsWith('multipart/')) return;
    if (typeof key !== 'string' || key.length < 1 || key.length > 255) {
      throw new AppError('validation_failed', 'Idempotency-Key must be 1 to 255 characters', { errors: [{ path: 'Idempotency-Key', message: 'must be 1 to 255 characters' }] });
    }
    const path = request.url.split('?')[0];
    const id = createHash('sha256').update(`${request.identity.keyId}\n${request.method}\n${path}\n${key}`).digest('hex');
    const requestHash = bodyHash(request.body);
    const now = clock();
    const record: IdempotencyDoc = { id, state: 'running', requestHash, createdAt: now.toISOString(), expiresAt: new Date(now.getTime() + KEEP_MS).toISOString() };
    try {
      await records.insertOne(record);
      request.idempotencyRecord = id;
      return;
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    const existing = await records.findOne({ id });
    if (!existing || existing.expiresAt < now.toISOString()) {
      await records.deleteOne({ id });
      await records.insertOne(record);
      request.idempotencyRecord = id;
      return;
    }
    if (existing.requestHash !== requestHash) {
      throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body');
    }
    if (existing.state === 'running') {
      if (now.getTime() - Date.parse(existing.createdAt) < STALE_RUNNING_MS) {
        throw new AppError('idempotency_in_progress', 'The first request with this Idempotency-Key is still running; retry shortly', { headers: { 'retry-after': '1' } });
      }
      const taken = await records.updateOne({ id, state: 'running', createdAt: existing.createdAt }, { $set: { createdAt: now.toISOString() } });
      if (!taken) throw new AppError('idempotency_in_progress', 'The first request with this Idempotency-Key is still running; retry shortly');
      request.idempotencyRecord = id;
      return;
    }
    for (const [name, value] of Object.entries(existing.headers ?? {})) reply.header(name, value);
    reply.header('idempotent-replayed', 'true');
    return reply.code(existing.status ?? 200).serializer((p: unknown) => p as string).send(existing.body ?? '');
  });

  app.addHook('onSend', async (request: FastifyRequest, reply, payload) => {
    const id = request.idempotencyRecord;
    if (!id) return payload;
    request.idempotencyRecord = undefined;
    const cacheable = reply.statusCode >= 200 && reply.statusCode < 300 && (typeof payload === 'string' || Buffer.isBuffer(payload));
    if (!cacheable) {
      await records.deleteOne({ id, state: 'running' });
      return payload;
    }
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const v = reply.getHeader(name);
      if (v !== undefined) headers[name] = String(v);
    }
    await records.updateOne({ id }, { $set: { state: 'done', status: reply.statusCode, headers, body: payload.toString() } });
    return payload;
  });
}

/** Drops expired records; run periodically. */
export async function purgeExpiredIdempotency(records: DocumentCollection<IdempotencyDoc>, now: Date): Promise<number> {
  return records.deleteMany({ expiresAt: { $lt: now.toISOString() } });
}
