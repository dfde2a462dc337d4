import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import multipart from '@fastify/multipart';
import { decorateIdentity, requireSignedIdentity, signedBodyComplete } from '@estate/platform/auth';
import { createHttpApp } from '@estate/platform/http';
import { identityFor, TEST_SIGNING_SECRET, TEST_TRUST } from '@estate/testing';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { proxyToUpstreams } from '../src/clients/upstreams.client';

const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const UPLOAD_LIMIT = 2 * 1024 * 1024;
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** A multipart body as a browser sends it, and its content type. */
async function form(files: Buffer[]): Promise<{ body: Buffer; type: string }> {
  const data = new FormData();
  for (const file of files) data.append('file', new Blob([file], { type: 'image/jpeg' }), 'photo.jpg');
  const encoded = new Response(data);
  return { body: Buffer.from(await encoded.arrayBuffer()), type: encoded.headers.get('content-type')! };
}

/**
 * The gateway's forwarding of uploads to a service that checks the signed digest of the streamed body (as
 * media does): what arrives is what was sent, whole, and a refused upload leaves nothing in the spool folder.
 */
describe('gateway upload forwarding (distributed profile)', () => {
  let upstream: FastifyInstance;
  let gateway: FastifyInstance;
  let origin: string;
  let spoolDir: string;
  const received: { files: { bytes: number; sha256: string }[] }[] = [];

  beforeAll(async () => {
    upstream = await createHttpApp({ service: 'media', logger: log });
    requireSignedIdentity(upstream, TEST_TRUST);
    await upstream.register(multipart, { limits: { fileSize: 10 * 1024 * 1024 } });
    upstream.post('/v1/listings/:id/media', async (request, reply) => {
      const files: { bytes: number; sha256: string }[] = [];
      for await (const part of request.parts()) {
        if (part.type !== 'file') continue;
        const data = await part.toBuffer();
        files.push({ bytes: data.length, sha256: sha256(data) });
      }
      await signedBodyComplete(request);
      received.push({ files });
      return reply.code(201).send({ files });
    });
    await upstream.listen({ port: 0, host: '127.0.0.1' });

    spoolDir = mkdtempSync(join(tmpdir(), 'gateway-spool-test-'));
    gateway = await createHttpApp({ service: 'gateway', logger: log });
    decorateIdentity(gateway);
    gateway.addHook('onRequest', async (request) => {
      request.identity = identityFor('acc_alice');
    });
    await proxyToUpstreams(gateway, {
      upstreams: [
        {
          name: 'media',
          url: `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}`,
          routes: ['/v1/listings/:id/media'],
        },
      ],
      signingSecret: TEST_SIGNING_SECRET,
      jsonBodyLimit: 1024 * 1024,
      uploadBodyLimit: UPLOAD_LIMIT,
      spoolDir,
    });
    await gateway.listen({ port: 0, host: '127.0.0.1' });
    origin = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    rmSync(spoolDir, { recursive: true, force: true });
  });

  beforeEach(() => {
    received.length = 0;
  });

  it('forwards an upload whole, its digest signed, and keeps no copy of it', async () => {
    const files = [Buffer.alloc(700_000, 1), Buffer.alloc(900_000, 2).fill(3, 450_000)];
    const { body, type } = await form(files);
    const res = await fetch(`${origin}/v1/listings/lst_1/media`, {
      method: 'POST',
      headers: { 'content-type': type },
      body,
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ files: files.map((f) => ({ bytes: f.length, sha256: sha256(f) })) });
    expect(readdirSync(spoolDir)).toEqual([]);
  });

  it('forwards an upload sent without a length (chunked), with its length', async () => {
    const file = Buffer.alloc(300_000, 7);
    const { body, type } = await form([file]);
    const chunks = [body.subarray(0, 100_000), body.subarray(100_000)];
    const res = await fetch(`${origin}/v1/listings/lst_1/media`, {
      method: 'POST',
      headers: { 'content-type': type },
      body: new ReadableStream({
        pull(controller) {
          const next = chunks.shift();
          if (next) controller.enqueue(next);
          else controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(201);
    expect(received).toEqual([{ files: [{ bytes: file.length, sha256: sha256(file) }] }]);
  });

  it('refuses an upload over the limit with 413 problem+json, forwarding and keeping nothing', async () => {
    const { body, type } = await form([Buffer.alloc(UPLOAD_LIMIT + 1, 5)]);
    const declared = await fetch(`${origin}/v1/listings/lst_1/media`, {
      method: 'POST',
      headers: { 'content-type': type },
      body,
    });
    expect(declared.status).toBe(413);
    expect(declared.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect((await declared.json()) as { code: string }).toMatchObject({ code: 'payload_too_large' });

    const chunks = [body.subarray(0, UPLOAD_LIMIT / 2), body.subarray(UPLOAD_LIMIT / 2)];
    const streamed = await fetch(`${origin}/v1/listings/lst_1/media`, {
      method: 'POST',
      headers: { 'content-type': type },
      body: new ReadableStream({
        pull(controller) {
          const next = chunks.shift();
          if (next) controller.enqueue(next);
          else controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect((await streamed.json()) as { code: string }).toMatchObject({ code: 'payload_too_large' });
    expect(received).toEqual([]);
    expect(readdirSync(spoolDir)).toEqual([]);
  });
});
