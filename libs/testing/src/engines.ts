/**
 * How test suites find real engines: the URL in the environment (set by `scripts/engines/up.sh`,
 * `.ci/run`, or the Jest global setup when it started containers). Without one a suite skips
 * loudly; with REQUIRE_ENGINES=1 a missing engine fails the run instead.
 */
export type EngineVar = 'MONGODB_URL' | 'NATS_URL' | 'ELASTICSEARCH_URL';

export const enginesRequired = (): boolean => process.env.REQUIRE_ENGINES === '1';

export function engineUrl(variable: EngineVar): string | undefined {
  const url = process.env[variable]?.trim();
  if (!url) return undefined;
  return variable === 'NATS_URL' ? withNatsCredentials(url) : url;
}

/**
 * The NATS URL with the test user's credentials in it (`NATS_USER` / `NATS_PASSWORD`, printed by
 * scripts/engines/up.sh), so every connection a test makes authenticates; NatsBus and
 * `natsConnectOptions` read them back out.
 */
function withNatsCredentials(url: string): string {
  const user = process.env.NATS_USER?.trim();
  if (!user) return url;
  const auth = `${encodeURIComponent(user)}:${encodeURIComponent(process.env.NATS_PASSWORD ?? '')}@`;
  return url
    .split(',')
    .map((server) => {
      const s = server.trim();
      if (s.includes('@')) return s;
      const scheme = /^[a-z]+:\/\//i.exec(s)?.[0] ?? '';
      return `${scheme}${auth}${s.slice(scheme.length)}`;
    })
    .join(',');
}

/** A service process's own NATS user and password (`NATS_PASSWORD_<SERVICE>` from up.sh), when the server requires them. */
export function natsServiceCredentials(service: string): { NATS_USER: string; NATS_PASSWORD: string } | undefined {
  const password = process.env[`NATS_PASSWORD_${service.toUpperCase()}`];
  return password ? { NATS_USER: service, NATS_PASSWORD: password } : undefined;
}

/** The NATS URL without credentials (a service process gets its own user instead). */
export const natsUrlWithoutCredentials = (url: string): string =>
  url
    .split(',')
    .map((s) => s.trim().replace(/^([a-z]+:\/\/)?[^/@]*@/i, '$1'))
    .join(',');

/**
 * `describe` for a suite that needs real engines. Skips (with a warning naming the variable) when
 * one is missing, unless REQUIRE_ENGINES=1, where the suite fails with the same message.
 */
export function describeWithEngines(
  name: string,
  needs: EngineVar[],
  body: (urls: Record<EngineVar, string>) => void,
): void {
  const missing = needs.filter((v) => !engineUrl(v));
  if (missing.length === 0) {
    const urls = Object.fromEntries(needs.map((v) => [v, engineUrl(v)!])) as Record<EngineVar, string>;
    describe(name, () => body(urls));
    return;
  }
  const reason = `needs ${missing.join(', ')} (run scripts/engines/up.sh, or have a Docker engine for testcontainers)`;
  if (enginesRequired()) {
    describe(name, () => {
      it('has its engines (REQUIRE_ENGINES=1)', () => {
        throw new Error(`${name}: ${reason}`);
      });
    });
    return;
  }
  process.stderr.write(`\n[engines] SKIPPED "${name}": ${reason}\n`);
  describe.skip(`${name} [skipped: ${reason}]`, () => body({} as Record<EngineVar, string>));
}
