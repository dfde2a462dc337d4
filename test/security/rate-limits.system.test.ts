import { describeWithEngines } from '@estate/testing';
import { apiClient, startCluster, type ApiResponse, type Cluster } from '../system/harness';

const PER_KEY = 10;
const ANONYMOUS = 6;

/**
 * Tier 3: two gateway processes on the shared engines. A client spreading its requests over the replicas
 * (a load balancer, or on purpose) gets no more than one limit: the counters live in NATS, not in each
 * process.
 */
describeWithEngines(
  'rate limits shared by gateway replicas (processes, real engines)',
  ['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'],
  (urls) => {
    let cluster: Cluster;

    beforeAll(async () => {
      cluster = await startCluster({
        name: 'sysrate',
        engines: urls,
        // The gateways' own routes (API keys) are enough: no service behind them.
        replicas: { listings: 0, media: 0, leads: 0, webhooks: 0 },
        gateways: 2,
        env: {
          gateway: {
            RATE_LIMIT_PER_MINUTE: String(PER_KEY),
            RATE_LIMIT_ANONYMOUS_PER_MINUTE: String(ANONYMOUS),
          },
        },
      });
    }, 120_000);
    afterAll(async () => {
      await cluster?.stop();
    }, 60_000);

    const keyNames = async (secret: string): Promise<string[]> => {
      const res = await apiClient(cluster.gateways[1], secret)('GET', '/v1/api-keys?limit=100');
      expect(res.status).toBe(200);
      return (res.body.items as { name: string }[]).map((k) => k.name);
    };

    it('one key alternating between the replicas is held to one shared limit, and a write past it makes nothing', async () => {
      const [a, b] = cluster.gateways;
      const admin = cluster.keys.admin;
      // A second admin key, to look at the account afterwards (its bucket is its own).
      const witness = await apiClient(a, admin)('POST', '/v1/api-keys', { name: 'witness', role: 'admin' });
      expect(witness.status).toBe(201);
      const remaining: string[] = [];
      for (let i = 1; i < PER_KEY; i++) {
        const res = await apiClient(i % 2 ? b : a, admin)('GET', '/v1/api-keys?limit=1');
        expect(res.status).toBe(200);
        expect(res.headers.get('ratelimit-limit')).toBe(String(PER_KEY));
        remaining.push(res.headers.get('ratelimit-remaining')!);
      }
      // Counted as one: the remaining count falls on both replicas alike.
      expect(remaining).toEqual(Array.from({ length: PER_KEY - 1 }, (_, i) => String(PER_KEY - 2 - i)));
      const refused: ApiResponse[] = [];
      for (const gateway of [a, b]) {
        refused.push(await apiClient(gateway, admin)('GET', '/v1/api-keys'));
        refused.push(
          await apiClient(gateway, admin)('POST', '/v1/api-keys', { name: 'past the limit', role: 'admin' }),
        );
      }
      for (const res of refused) {
        expect(res.status).toBe(429);
        expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(res.body).toMatchObject({ code: 'rate_limited', requestId: res.headers.get('x-request-id') });
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(res.headers.get('ratelimit-remaining')).toBe('0');
      }
      expect(await keyNames(witness.body.secret)).not.toContain('past the limit');
    });

    it('requests without a valid key are held to the anonymous limit per address, across the replicas', async () => {
      const [a, b] = cluster.gateways;
      const guesses = Array.from({ length: ANONYMOUS + 2 }, (_, i) => `ek_guess_${String(i).padStart(32, '0')}`);
      const statuses: number[] = [];
      for (const [i, guess] of guesses.entries()) {
        const res = await apiClient(i % 2 ? b : a, i === 3 ? null : guess)('POST', '/v1/api-keys', {
          name: 'guessed',
          role: 'admin',
        });
        statuses.push(res.status);
        expect(res.headers.get('ratelimit-limit')).toBe(String(ANONYMOUS));
        if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      expect(statuses).toEqual([...Array(ANONYMOUS).fill(401), 429, 429]);
      // The refusals reached nothing, and a live key is still served on its own count.
      const platform = await apiClient(b, cluster.keys.platform)('POST', '/v1/accounts', { name: 'Still served' });
      expect(platform.status).toBe(201);
      expect(await keyNames(platform.body.adminKey.secret)).not.toContain('guessed');
    });
  },
);
