import { addressRefusal, isPublicAddress, urlRefusal } from './index';

describe('outbound targets', () => {
  it.each([
    '127.0.0.1',
    '10.0.0.8',
    '172.20.1.1',
    '192.168.0.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    '::',
    'fe80::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '::ffff:10.1.1.1',
    '224.0.0.1',
    'not-an-ip',
    '::127.0.0.1',
    '::7f00:1',
    '::8.8.8.8',
    '0:0:0:0:0:ffff:127.0.0.1',
    '::ffff:0:127.0.0.1',
    '::ffff:7f00:1',
    '2002:7f00:1::',
    '2002:a9fe:a9fe::1',
    '2002:c0a8:101::',
    '2001:0:4136:e378:8000:63bf:80ff:fffe',
    '64:ff9b::7f00:1',
    'fe80::1%eth0',
  ])('refuses %s', (address) => expect(isPublicAddress(address)).toBe(false));

  it.each(['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.4.4', '2002:808:808::1'])(
    'accepts %s',
    (address) => expect(isPublicAddress(address)).toBe(true),
  );

  it('refuses http, credentials, local names and private literals unless private targets are allowed', () => {
    expect(urlRefusal('https://hooks.example.com/x', false)).toBeNull();
    expect(urlRefusal('http://hooks.example.com/x', false)).toMatch(/https/);
    expect(urlRefusal('https://user:pw@hooks.example.com/x', false)).toMatch(/credentials/);
    expect(urlRefusal('https://localhost/x', false)).toMatch(/local/);
    expect(urlRefusal('https://printer.local/x', false)).toMatch(/local/);
    expect(urlRefusal('https://10.0.0.1/x', false)).toMatch(/private/);
    expect(urlRefusal('https://[::1]/x', false)).toMatch(/private/);
    expect(urlRefusal('https://[::127.0.0.1]:8443/x', false)).toMatch(/private/);
    expect(urlRefusal('https://[2002:7f00:1::]/x', false)).toMatch(/private/);
    expect(urlRefusal('https://localhost./x', false)).toMatch(/local/);
    expect(urlRefusal('https://api.localhost../x', false)).toMatch(/local/);
    expect(urlRefusal('http://127.0.0.1:8080/x', true)).toBeNull();
    expect(urlRefusal('ftp://127.0.0.1/x', true)).toMatch(/https/);
  });

  it('refuses a name when any of its addresses is private', () => {
    expect(addressRefusal(['93.184.216.34', '10.0.0.1'], false)).toMatch(/10\.0\.0\.1/);
    expect(addressRefusal(['93.184.216.34'], false)).toBeNull();
    expect(addressRefusal(['127.0.0.1'], true)).toBeNull();
  });
});
