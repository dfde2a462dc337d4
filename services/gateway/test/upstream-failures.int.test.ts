import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpApp } from '@estate/platform/http';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { proxyToUpstreams } from '../src/clients/upstreams.client';

const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/** A service whose answer breaks off after its head: the gateway says so (502), not "our fault" (500). */
describe('gateway: an upstream answer that breaks off', () => {
  let upstream: Server;
  let gateway: FastifyInstance;
  let origin: string;
  let spoolDir: string;

  beforeAll(async () => {
    spoolDir = mkdtempSync(join(tmpdir(), 'gateway-upstream-failures-'));
    upstream = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': '5000' });
      // Then the connection goes, with none of the body: the file vanished under the service, or it died.
      setImmediate(() => res.socket?.destroy());
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    gateway = await createHttpApp({ service: 'gateway', logger: log });
    await proxyToUpstreams(gateway, {
      upstreams: [
        {
          name: 'media',
          url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
          routes: ['/files/*'],
        },
      ],
      signingSecret: 'x'.repeat(64),
      jsonBodyLimit: 1024 * 1024,
      uploadBodyLimit: 1024 * 1024,
      spoolDir,
    });
    await gateway.listen({ port: 0, host: '127.0.0.1' });
    origin = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await gateway?.close();
    await new Promise((resolve) => upstream?.close(resolve));
    rmSync(spoolDir, { recursive: true, force: true });
  });

  it('answers 502 bad_gateway when the body breaks off before anything was sent on', async () => {
    const res = await fetch(`${origin}/files/tok/none`);
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(await res.json()).toMatchObject({ status: 502, code: 'bad_gateway' });
  });

  it('leaves a spool folder it was given, and what is in it, when it closes', async () => {
    const given = mkdtempSync(join(tmpdir(), 'gateway-given-spool-'));
    writeFileSync(join(given, 'kept'), 'not the gateway’s');
    const other = await createHttpApp({ service: 'gateway', logger: log });
    try {
      await proxyToUpstreams(other, {
        upstreams: [],
        signingSecret: 'x'.repeat(64),
        jsonBodyLimit: 1024,
        uploadBodyLimit: 1024,
        spoolDir: given,
      });
      await other.close();
      expect(existsSync(join(given, 'kept'))).toBe(true);
    } finally {
      rmSync(given, { recursive: true, force: true });
    }
  });
});
