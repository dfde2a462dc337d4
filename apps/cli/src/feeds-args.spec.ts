import { parseFeedsArgs, withSecret } from './feeds-args';
import { problemText, runText } from './feeds';
import { EstateApiError, type Schemas } from '@estate/client';

describe('feeds arguments', () => {
  it('makes a bearer feed whose token comes from FEED_TOKEN, with only the fields given', () => {
    const command = parseFeedsArgs([
      'add',
      '--name',
      'Acme MLS',
      '--service-root',
      'https://api.example.com/reso/odata',
      '--source',
      'acme',
      '--requests-per-second',
      '5',
      '--every-minutes',
      '15',
      '--media',
    ]);
    expect(command).toEqual({
      action: 'add',
      json: false,
      secret: { from: 'env', name: 'FEED_TOKEN' },
      body: {
        name: 'Acme MLS',
        serviceRoot: 'https://api.example.com/reso/odata',
        originatingSystemName: 'acme',
        budget: { requestsPerSecond: 5 },
        schedule: { everyMinutes: 15 },
        media: true,
        auth: { type: 'bearer' },
      },
    });
    if (command.action !== 'add') throw new Error('not add');
    expect(withSecret(command.body, 's3cret').auth).toEqual({ type: 'bearer', token: 's3cret' });
  });

  it('makes client credentials whose secret comes from FEED_CLIENT_SECRET, another variable or stdin', () => {
    const base = ['add', '--name', 'T', '--service-root', 'https://t.example/odata'];
    const cc = ['--client-id', 'abc', '--token-url', 'https://t.example/token', '--scope', 'api'];
    const command = parseFeedsArgs([...base, ...cc]);
    expect(command).toMatchObject({
      secret: { from: 'env', name: 'FEED_CLIENT_SECRET' },
      body: {
        auth: { type: 'client_credentials', clientId: 'abc', tokenUrl: 'https://t.example/token', scope: 'api' },
      },
    });
    if (command.action !== 'add') throw new Error('not add');
    expect(withSecret(command.body, 'x').auth).toMatchObject({ clientSecret: 'x' });
    expect(parseFeedsArgs([...base, ...cc, '--secret-env', 'MY_SECRET'])).toMatchObject({
      secret: { from: 'env', name: 'MY_SECRET' },
    });
    expect(parseFeedsArgs([...base, '--secret-stdin'])).toMatchObject({ secret: { from: 'stdin' } });
  });

  it('refuses a secret in the arguments, naming where it goes instead, and never repeating it', () => {
    for (const flag of ['--token', '--client-secret', '--secret']) {
      const attempt = () =>
        parseFeedsArgs(['add', '--name', 'T', '--service-root', 'https://t.example/odata', flag, 'hunter2-secret']);
      expect(attempt).toThrow(/refused: a secret in the arguments.*FEED_TOKEN.*--secret-stdin/);
      try {
        attempt();
      } catch (err) {
        expect(String((err as Error).message)).not.toContain('hunter2-secret');
      }
    }
  });

  it('refuses what does not go together, bad numbers and missing names', () => {
    const base = ['add', '--name', 'T', '--service-root', 'https://t.example/odata'];
    expect(() => parseFeedsArgs([...base, '--client-id', 'abc'])).toThrow(/--client-id and --token-url/);
    expect(() => parseFeedsArgs([...base, '--scope', 'x'])).toThrow(/--scope goes with/);
    expect(() => parseFeedsArgs([...base, '--secret-env', 'A', '--secret-stdin'])).toThrow(/not both/);
    expect(() => parseFeedsArgs([...base, '--page-size', 'lots'])).toThrow(/--page-size takes a number, not "lots"/);
    expect(() => parseFeedsArgs([...base, '--requests-per-hour', '100'])).toThrow(/with --requests-per-second/);
    expect(() => parseFeedsArgs(['add', '--service-root', 'https://t.example/odata'])).toThrow(/--name/);
    expect(() => parseFeedsArgs(['add', '--name', 'T'])).toThrow(/--service-root/);
    expect(() => parseFeedsArgs(['show'])).toThrow(/Give the feed id/);
    expect(() => parseFeedsArgs(['show', 'a', 'b'])).toThrow(/Give the feed id/);
    expect(() => parseFeedsArgs(['list', '--dry-run'])).toThrow(/--dry-run does not go with feeds list/);
    expect(() => parseFeedsArgs(['run', 'fed_1', '--media'])).toThrow(/--media does not go with feeds run/);
    expect(() => parseFeedsArgs(['run', 'fed_1', '--bogus'])).toThrow(/Unknown option '--bogus'/);
    expect(() => parseFeedsArgs(['sync'])).toThrow(/Unknown command "feeds sync"/);
  });

  it('reads run, runs and show-run', () => {
    expect(parseFeedsArgs(['run', 'fed_1', '--dry-run', '--reconcile', '--json'])).toEqual({
      action: 'run',
      feedId: 'fed_1',
      dryRun: true,
      reconcile: true,
      follow: true,
      json: true,
    });
    expect(parseFeedsArgs(['run', 'fed_1', '--no-follow', '--url', 'http://127.0.0.1:3401'])).toMatchObject({
      dryRun: false,
      reconcile: false,
      follow: false,
      url: 'http://127.0.0.1:3401',
    });
    expect(parseFeedsArgs(['runs', 'fed_1'])).toEqual({ action: 'runs', feedId: 'fed_1', json: false });
    expect(parseFeedsArgs(['show-run', 'job_1'])).toEqual({ action: 'show-run', runId: 'job_1', json: false });
  });
});

describe('feeds output', () => {
  const ledger: Schemas['FeedLedger'] = {
    dryRun: false,
    cursorBefore: null,
    cursorAfter: { modificationTimestamp: '2026-11-28T10:00:00.000Z', listingKey: 'K9' },
    fetched: 1200,
    created: 1000,
    updated: 150,
    unchanged: 49,
    failed: 1,
    reconcile: true,
    keys: null,
    quarantined: 0,
    hidden: 0,
    entityEvents: null,
    restored: 0,
    removed: 0,
    mediaDownloaded: 0,
    mediaUnchanged: 0,
    mediaUploaded: 0,
    mediaRemoved: 0,
    mediaFailed: 0,
    requests: 7,
    retries: 1,
    restarts: 0,
    lagSeconds: 42.4,
    durationMs: 12_345,
    stopReason: 'the key pull did not reach its last page',
  };

  it('prints the ledger of a run, its stop reason and its record errors', () => {
    const text = runText({
      id: 'job_1',
      type: 'feed_sync',
      state: 'partially_failed',
      progress: { total: 1200, processed: 1200, succeeded: 1199, failed: 1 },
      results: [],
      errors: [
        { index: 7, externalId: 'K7', code: 'validation_failed', message: 'must be >= 0', path: 'pricing.listPrice' },
      ],
      createdAt: '2026-11-28T10:00:00.000Z',
      startedAt: null,
      finishedAt: null,
      feedId: 'fed_1',
      ledger,
    }).join('\n');
    expect(text).toContain('run job_1  partially_failed  feed fed_1  12.3 s');
    expect(text).toContain('fetched 1,200, created 1,000, updated 150, unchanged 49, failed 1');
    expect(text).toContain('keys none (no complete key pull)');
    expect(text).toContain('requests 7, retries 1, restarts 0, lag 42 s');
    expect(text).toContain('cursor      (start) -> 2026-11-28T10:00:00.000Z K9');
    expect(text).toContain('stopped     the key pull did not reach its last page');
    expect(text).toContain('error       #7 K7 validation_failed pricing.listPrice: must be >= 0');
  });

  it('prints a problem with its fields and request id', () => {
    const err = new EstateApiError(422, {
      type: 'about:blank',
      title: 'Unprocessable',
      status: 422,
      code: 'validation_failed',
      detail: 'The body is not valid',
      requestId: 'req-1',
      errors: [{ path: 'serviceRoot', message: 'must be an https URL' }],
    } as unknown as Schemas['Problem']);
    expect(problemText(err)).toEqual([
      '422 validation_failed: The body is not valid',
      '  serviceRoot: must be an https URL',
      '  request id req-1',
    ]);
  });
});
