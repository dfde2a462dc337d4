import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { createHttpApp } from '../src/http';

interface Line {
  level: number;
  msg: string;
  code?: string;
}

/**
 * A proxied answer is a stream from the service behind; when the client closes its connection first, that stream is
 * destroyed and fails (undici: `UND_ERR_ABORTED`). Nobody is left to answer: it is logged as the client leaving,
 * not as a failure of ours with its stack.
 */
describe('a client that closes its connection before the answer', () => {
  let app: FastifyInstance;
  let port: number;
  const lines: Line[] = [];
  let handlerStarted!: () => void;
  const started = new Promise<void>((resolve) => (handlerStarted = resolve));

  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (text: string) => void lines.push(JSON.parse(text) as Line) });
    app = await createHttpApp({ service: 'test', logger });
    // A POST whose body has arrived, as the gateway forwards it: the request is complete, the answer is not.
    app.post('/v1/slow', async () => {
      handlerStarted();
      // Like undici's body: never sends a byte, and fails with its abort error when destroyed.
      return new Readable({
        read() {},
        destroy(err, callback) {
          callback(err ?? Object.assign(new Error('Request aborted'), { name: 'AbortError', code: 'UND_ERR_ABORTED' }));
        },
      });
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(() => app.close());

  it('is logged at info as the client leaving, never as an error', async () => {
    const socket = connect(port, '127.0.0.1');
    socket.write('POST /v1/slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
    await started;
    socket.destroy();
    for (;;) {
      if (lines.some((l) => l.msg === 'request completed' || l.msg.includes('closed the connection'))) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 30,
        msg: 'the client closed the connection before its answer',
        code: 'UND_ERR_ABORTED',
      }),
    );
  });
});
