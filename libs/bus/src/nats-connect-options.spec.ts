import { natsConnectOptions } from './nats.bus';

describe('natsConnectOptions', () => {
  it('takes credentials out of the URLs and names the reply inbox after the user', () => {
    expect(natsConnectOptions('nats://tools:s3cr%40t@127.0.0.1:4222, nats://10.0.0.2:4222')).toEqual({
      servers: ['nats://127.0.0.1:4222', 'nats://10.0.0.2:4222'],
      user: 'tools',
      pass: 's3cr@t',
      inboxPrefix: '_INBOX_tools',
    });
  });

  it('prefers the credentials given beside the URL', () => {
    expect(natsConnectOptions('nats://tools:x@127.0.0.1:4222', { user: 'media', password: 'p' })).toEqual({
      servers: ['nats://127.0.0.1:4222'],
      user: 'media',
      pass: 'p',
      inboxPrefix: '_INBOX_media',
    });
  });

  it('connects anonymously when no user is given', () => {
    expect(natsConnectOptions('127.0.0.1:4222')).toEqual({ servers: ['127.0.0.1:4222'] });
  });
});
