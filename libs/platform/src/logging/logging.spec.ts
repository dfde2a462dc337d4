import { Writable } from 'node:stream';
import { createLogger, serviceLogger } from './index';

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
