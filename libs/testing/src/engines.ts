/**
 * How test suites find real engines: the URL in the environment (set by `scripts/engines/up.sh`,
 * `.ci/run`, or the Jest global setup when it started containers). Without one a suite skips
 * loudly; with REQUIRE_ENGINES=1 a missing engine fails the run instead.
 */
export type EngineVar = 'MONGODB_URL' | 'NATS_URL' | 'ELASTICSEARCH_URL';

export const enginesRequired = (): boolean => process.env.REQUIRE_ENGINES === '1';

export function engineUrl(variable: EngineVar): string | undefined {
  const url = process.env[variable];
  return url && url.trim().length > 0 ? url.trim() : undefined;
}

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
