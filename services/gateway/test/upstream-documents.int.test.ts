import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { upstreamDocuments } from '../src/clients/upstreams.client';

/** A service whose /openapi.json answers with the statuses given, one per call, then the last one again. */
async function service(statuses: number[]): Promise<{ url: string; server: Server }> {
  let call = 0;
  const server = createServer((_req, res) => {
    const status = statuses[Math.min(call++, statuses.length - 1)];
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(
      status === 200 ? JSON.stringify({ openapi: '3.1.0', info: { title: 'svc', version: '1' }, paths: {} }) : '{}',
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('the services’ OpenAPI documents at the gateway', () => {
  const servers: Server[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  });

  it('keeps a service’s last document while it cannot send one, and leaves out a service never heard from', async () => {
    const flaky = await service([200, 503]);
    const neverUp = await service([503]);
    servers.push(flaky.server, neverUp.server);
    const documents = upstreamDocuments([flaky.url, neverUp.url]);

    const first = await documents();
    expect(first.map((d) => (d.info as { title: string }).title)).toEqual(['svc']);
    const second = await documents();
    expect(second).toEqual(first);
  });
});
