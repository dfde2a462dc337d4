import { Writable } from 'node:stream';
import { createLogger, redactKeys, redactUrl, serviceLogger } from './index';

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

  it('hides the query values of lead routes but the impersonal ones, and every email or phone anywhere', () => {
    expect(redactUrl('/v1/leads?q=private.person@ex.com&limit=5&status=new')).toBe(
      '/v1/leads?q=[redacted]&limit=5&status=new',
    );
    expect(redactUrl('/v1/leads?q=Jos%C3%A9&minScore=40&sort=-score&unknownName=Ann')).toBe(
      '/v1/leads?q=[redacted]&minScore=40&sort=-score&unknownName=[redacted]',
    );
    expect(redactUrl('/V1/LEADS/?q=ann')).toBe('/V1/LEADS/?q=[redacted]');
    expect(redactUrl('/v1/listings?q=ann%40example.com&minPrice=1500000&city=Austin')).toBe(
      '/v1/listings?q=[redacted]&minPrice=1500000&city=Austin',
    );
    for (const phone of [
      '%2B15125550142',
      '+15125550142',
      '(512)%20555-0142',
      '512.555.0142',
      '+44%2020%207946%200958',
    ])
      expect(redactUrl(`/v1/listings?q=${phone}`)).toBe('/v1/listings?q=[redacted]');
    expect(redactUrl('/v1/leads/ann@example.com/activities')).toBe('/v1/leads/[redacted]/activities');
    expect(redactUrl('/v1/listings?updatedSince=2026-11-24T10:00:00Z&near=30.27,-97.74&radiusKm=5')).toBe(
      '/v1/listings?updatedSince=2026-11-24T10:00:00Z&near=30.27,-97.74&radiusKm=5',
    );
  });

  it('hides keys, emails and phones in free text, and leaves other numbers alone', () => {
    expect(redactKeys('Lead private.person@ex.com does not exist')).toBe('Lead [redacted] does not exist');
    expect(redactKeys('Lead +1 (512) 555-0142 or 5125550142 is not ek_0123456789abc')).toBe(
      'Lead [redacted] or [redacted] is not ek_[redacted]',
    );
    const plain = 'Listing lst_0mwu4ntwl000VV8 at version 12 of 2026-11-24, price 1500000, 30.27,-97.74';
    expect(redactKeys(plain)).toBe(plain);
  });

  it('is what every line logging a request shows as its URL', () => {
    const { lines, destination } = capture();
    createLogger({ service: 'gateway', destination }).info({ req: { method: 'GET', url: '/v1/x?key=s3cr3t' } }, 'in');
    expect(lines[0]).not.toContain('s3cr3t');
    expect(JSON.parse(lines[0]).req.url).toBe('/v1/x?key=[redacted]');
  });
});
