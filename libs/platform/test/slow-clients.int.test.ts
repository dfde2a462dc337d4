import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { createHttpApp } from '../src/http';

/** Opens a raw connection, writes `head`, and resolves with everything the server sends until it closes. */
function slowRequest(port: number, head: string): { socket: Socket; answer: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  socket.write(head);
  const answer = new Promise<string>((resolve) => {
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('close', () => resolve(text));
    socket.on('error', () => resolve(text));
  });
  return { socket, answer };
}

describe('a client that sends a request too slowly', () => {
  let app: FastifyInstance;
  let port: number;
  let handled = 0;

  beforeAll(async () => {
    app = await createHttpApp({ service: 'test', logger: pino({ level: 'silent' }), requestTimeoutMs: 500 });
    app.post('/v1/things', async () => {
      handled++;
      return { ok: true };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(() => app.close());

  it('is answered 408 problem+json and disconnected when the body stalls, and the route never runs', async () => {
    const { answer } = slowRequest(
      port,
      'POST /v1/things HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":',
    );
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toMatch(/content-type: application\/problem\+json/i);
    expect(text).toMatch(/x-request-id: \S+/i);
    expect(text).toContain('"code":"request_timeout"');
    expect(handled).toBe(0);
  });

  it('is disconnected when the headers never finish', async () => {
    const { answer } = slowRequest(port, 'GET /v1/things HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const text = await answer;
    expect(text === '' || /^HTTP\/1\.1 408 /.test(text)).toBe(true);
  });

  it('still serves a client that sends its request in time', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/things`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(200);
    expect(handled).toBe(1);
  });
});
