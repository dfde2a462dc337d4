import { checkedLookup, TargetRefused } from '@estate/platform/net';
import { ReceiverClient } from '../src/clients/receiver.client';

const lookup = (allowPrivate: boolean, host: string, all: boolean) =>
  new Promise<{ err: Error | null; address: unknown }>((resolve) =>
    checkedLookup(allowPrivate)(host, { all }, (err, address) => resolve({ err, address })),
  );

describe('the target check at connection time', () => {
  it('refuses a name that resolves to a loopback address, also when asked for every address', async () => {
    for (const all of [false, true]) {
      const { err } = await lookup(false, 'localhost', all);
      expect(err).toBeInstanceOf(TargetRefused);
      expect(err!.message).toMatch(/private, loopback or link-local/);
    }
  });

  it('hands the checked address to the connection when private targets are allowed', async () => {
    expect((await lookup(true, 'localhost', false)).address).toMatch(/^(127\.0\.0\.1|::1)$/);
    const all = (await lookup(true, 'localhost', true)).address as { address: string }[];
    expect(all.map((a) => a.address)).toEqual(expect.arrayContaining([expect.stringMatching(/^(127\.0\.0\.1|::1)$/)]));
  });

  it('refuses IPv6 and trailing-dot spellings of loopback when a delivery is sent, before any connection', async () => {
    const receiver = new ReceiverClient({ allowPrivateTargets: false });
    for (const url of ['https://[::127.0.0.1]:8443/x', 'https://[2002:7f00:1::]/x', 'https://localhost./x']) {
      const answer = await receiver.post(url, '{}', {});
      expect({ url, ...answer }).toMatchObject({ url, status: null, error: expect.stringMatching(/^target refused/) });
      expect(await receiver.refusal(url)).toEqual(expect.any(String));
    }
    receiver.close();
  });
});
