import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './build';
import { enginesRequired } from './engines';
import { listingBody } from './listing-fixture';

/**
 * The RESO Web API's test helpers: listings that give every filter scenario of RESO's Core tests something to match,
 * and RESO's own Core tests (tools/reso-commander), which need a JDK 17 and Maven.
 */

const run = promisify(execFile);
const COMMANDER = join(REPO_ROOT, 'tools', 'reso-commander', 'commander.sh');
const MINUTES = 60_000;

/** The RESOScript's parameters for what our listings hold (the template's others stand as they are). */
export const COMMANDER_PARAMETERS = [
  'DecimalValueLow=100000.00',
  'DateField=OnMarketDate',
  'TimestampField=OnMarketTimestamp',
];

/**
 * Listings for the RESOScript's sample values (BedroomsTotal 1 and 15, ListPrice 100000.00 and 1234567.89,
 * StandardStatus ActiveUnderContract, AccessibilityFeatures AccessibleApproachWithRamp and Visitable, OnMarketDate
 * 2019-12-31, OnMarketTimestamp 2019-12-31T23:55:55-09:00), more than two pages of five. Answers their ids in order.
 */
export async function seedCoreListings(url: string, key: string): Promise<string[]> {
  const specs: Array<{ status: string; listedAt: string; price: number; beds: number; features: string[] }> = [
    {
      status: 'active_under_contract',
      listedAt: '2019-12-31T23:55:55-09:00',
      price: 100000,
      beds: 1,
      features: ['Accessible Approach with Ramp', 'Visitable'],
    },
    {
      status: 'active',
      listedAt: '2019-12-31T12:00:00Z',
      price: 250000,
      beds: 3,
      features: ['Accessible Approach with Ramp'],
    },
    { status: 'pending', listedAt: '2018-06-01T00:00:00Z', price: 500000, beds: 5, features: ['Visitable'] },
    { status: 'active', listedAt: '2021-03-01T00:00:00Z', price: 300000, beds: 2, features: [] },
    ...Array.from({ length: 8 }, (_, i) => ({
      status: i % 2 ? 'active' : 'closed',
      listedAt: `2022-0${i + 1}-01T00:00:00Z`,
      price: 150000 + i * 100000,
      beds: i,
      features: [],
    })),
  ];
  const ids: string[] = [];
  for (const s of specs) {
    const res = await fetch(`${url}/v1/listings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(
        listingBody({
          status: s.status,
          listedAt: s.listedAt,
          pricing: { listPrice: s.price },
          propertyDetails: { propertyType: 'residential', bedrooms: s.beds, features: s.features },
        }),
      ),
    });
    if (res.status !== 201) throw new Error(`seeding answered ${res.status}: ${await res.text()}`);
    ids.push(((await res.json()) as { id: string }).id);
  }
  return ids;
}

/**
 * Whether RESO's commander can run here: false (said loudly) without a JDK and Maven, a failure under
 * REQUIRE_ENGINES=1. Builds it once (cached outside the repository) when it can.
 */
export async function commanderAvailable(): Promise<boolean> {
  try {
    await run('javac', ['-version']);
    await run('mvn', ['-v']);
  } catch {
    if (enginesRequired()) throw new Error('RESO commander needs a JDK 17 and Maven on the PATH (REQUIRE_ENGINES=1)');
    process.stderr.write('\n[engines] SKIPPED RESO commander: needs a JDK 17 and Maven on the PATH\n');
    return false;
  }
  const built = await commander(['build']);
  if (built.code !== 0) throw new Error(`RESO commander did not build:\n${built.output}`);
  return true;
}

/** Runs tools/reso-commander/commander.sh; `last` is its summary line (`commander_core passed=N failed=M skipped=K`). */
export async function commander(args: string[]): Promise<{ code: number; output: string; last: string }> {
  try {
    const { stdout } = await run('bash', [COMMANDER, ...args], { maxBuffer: 16 * 1024 * 1024, timeout: 20 * MINUTES });
    return { code: 0, output: stdout, last: stdout.trim().split('\n').pop() ?? '' };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof e.code === 'number' ? e.code : 1,
      output: `${e.stdout ?? ''}${e.stderr ?? ''}`,
      last: (e.stdout ?? '').trim().split('\n').pop() ?? '',
    };
  }
}
