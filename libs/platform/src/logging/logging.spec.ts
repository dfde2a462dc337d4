import { Writable } from 'node:stream';
import { createLogger, redactUrl, serviceLogger } from './index';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, destination };
}

describe('serviceLogger', () => {
  it('writes the service once, the child’s own, keeping the other bindings', () => {
    const { lines, destination } = capture();
    const root = createLogger({ service: 'embedded', destination }).child({ component: 'bus' });
    serviceLogger(root, 'listings').child({ durable: 'indexer' }).info({ secret: 'x' }, 'hello');
    const line = lines[0];
    expect(line.match(/"service":/g)).toHaveLength(1);
    expect(JSON.parse(line)).toMatchObject({
      service: 'listings',
      component: 'bus',
      durable: 'indexer',
      secret: '[redacted]',
      msg: 'hello',
    });
  });

  it('leaves the parent as it was', () => {
    const { lines, destination } = capture();
    const root = createLogger({ service: 'embedded', destination });
    serviceLogger(root, 'media');
    root.info('root');
    expect(JSON.parse(lines[0])).toMatchObject({ service: 'embedded' });
  });
});

describe('redactUrl', () => {
  it('hides the values of secret-looking query parameters and anything shaped like a key, and keeps the rest', () => {
    expect(redactUrl('/v1/listings?api_key=abc&limit=5&access_token=t&Token=x&cursor=c')).toBe(
      '/v1/listings?api_key=[redacted]&limit=5&access_token=[redacted]&Token=[redacted]&cursor=c',
    );
    expect(redactUrl('/v1/listings?%61pi_key=abc')).toBe('/v1/listings?%61pi_key=[redacted]');
    expect(redactUrl('/v1/listings/ek_0123456789abcdef?q=ek_abcdefghij')).toBe(
      '/v1/listings/ek_[redacted]?q=ek_[redacted]',
    );
    expect(redactUrl('/health/live')).toBe('/health/live');
    expect(redactUrl('/v1/leads?status=new,qualified&flag')).toBe('/v1/leads?status=new,qualified&flag');
  });

  it('is what every line logging a request shows as its URL', () => {
    const { lines, destination } = capture();
    createLogger({ service: 'gateway', destination }).info({ req: { method: 'GET', url: '/v1/x?key=s3cr3t' } }, 'in');
    expect(lines[0]).not.toContain('s3cr3t');
    expect(JSON.parse(lines[0]).req.url).toBe('/v1/x?key=[redacted]');
  });
});
