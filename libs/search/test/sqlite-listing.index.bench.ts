/**
 * Latency of the SQLite listing index at 100,000 listings of one account: p50/p95 of one query at a time for each
 * kind of search, with the query plans, the file size and the process RSS. Not a test (jest does not pick up
 * *.bench.ts). Run: npx esbuild libs/search/test/sqlite-listing.index.bench.ts --bundle --platform=node
 * --external:better-sqlite3 --outfile=/tmp/search.bench.js && node /tmp/search.bench.js [listings] [file]
 */
import { rmSync, statSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { listingStatuses, propertyTypes, type Listing } from '@estate/contracts/listings';
import type { IndexedListing, ListingSearch } from '../src/listing-index';
import { SqliteListingIndex } from '../src/sqlite-listing.index';

const COUNT = Number(process.argv[2] ?? 100_000);
const FILE = process.argv[3] ?? '/tmp/search-bench.sqlite';
const ACCOUNT = 'acc_bench';
const RUNS = 200;

// A small deterministic generator: the same data on every run.
let seed = 42;
/** mulberry32 */
const random = (): number => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)];
/** Skewed towards the first entries, as real cities and statuses are. */
const skewed = <T>(list: readonly T[]): T => list[Math.floor(random() ** 2 * list.length)];

const CITIES = Array.from({ length: 300 }, (_, i) => ({
  name: `City ${i}`,
  lat: 25 + random() * 20,
  lng: -120 + random() * 45,
}));
const WORDS = (
  'bright spacious renovated modern charming cozy quiet sunny open kitchen garden garage pool fireplace basement attic ' +
  'hardwood floors granite counters patio deck view river lake park school downtown family home house condo townhouse ' +
  'villa cottage bungalow loft studio acre lot barn office retail warehouse parking elevator gym sauna balcony terrace'
).split(' ');

function listingAt(i: number): IndexedListing {
  const city = skewed(CITIES);
  const created = Date.UTC(2020, 0, 1) + Math.floor(random() * 4 * 365 * 86_400_000);
  const description = Array.from({ length: 12 + Math.floor(random() * 30) }, () => pick(WORDS)).join(' ');
  const listing: Listing = {
    id: `lst_${i.toString(36).padStart(8, '0')}`,
    status: skewed(listingStatuses),
    pricing: { listPrice: Math.round(50_000 + random() ** 2 * 2_000_000), currency: 'USD', pricePerArea: null },
    propertyDetails: {
      propertyType: skewed(propertyTypes),
      livingAreaUnits: random() < 0.1 ? 'sqm' : 'sqft',
      bedrooms: Math.floor(random() * 7),
      bathrooms: 1 + Math.floor(random() * 8) / 2,
      livingArea: 400 + Math.floor(random() * 4000),
      description,
      features: Array.from({ length: Math.floor(random() * 4) }, () => pick(WORDS)),
    },
    location: {
      address: {
        street: `${i} Main St`,
        city: city.name,
        stateOrProvince: 'TX',
        postalCode: `${70000 + (i % 900)}`,
        country: 'US',
      },
      latitude: city.lat + (random() - 0.5) * 0.4,
      longitude: city.lng + (random() - 0.5) * 0.4,
    },
    media: { photoCount: 0, primaryPhoto: null, virtualTours: [], photosChangedAt: null },
    listedAt: random() < 0.1 ? null : new Date(created + 86_400_000).toISOString(),
    version: 1,
    createdAt: new Date(created).toISOString(),
    updatedAt: new Date(created + Math.floor(random() * 90 * 86_400_000)).toISOString(),
  };
  return { accountId: ACCOUNT, listing };
}

const base = (): ListingSearch => ({
  accountId: ACCOUNT,
  filters: {},
  sort: { by: 'createdAt', direction: 'desc' },
  limit: 20,
  facets: [],
});

const KINDS: Record<string, () => ListingSearch> = {
  filtered: () => {
    const min = 100_000 + Math.floor(random() * 500_000);
    return { ...base(), filters: { minPrice: min, maxPrice: min + 200_000, minBedrooms: 3 } };
  },
  status: () => ({ ...base(), filters: { status: [pick(['pending', 'closed', 'withdrawn'] as const)] } }),
  type: () => ({ ...base(), filters: { propertyType: [pick(['land', 'farm', 'commercial_sale'] as const)] } }),
  city: () => ({ ...base(), filters: { city: pick(CITIES).name } }),
  near: () => {
    const c = skewed(CITIES);
    return {
      ...base(),
      filters: { near: { lat: c.lat, lng: c.lng, radiusKm: 5 } },
      sort: { by: 'distance', direction: 'asc' },
    };
  },
  bbox: () => {
    const c = skewed(CITIES);
    return {
      ...base(),
      filters: { bbox: { minLng: c.lng - 0.1, minLat: c.lat - 0.1, maxLng: c.lng + 0.1, maxLat: c.lat + 0.1 } },
    };
  },
  q: () => ({ ...base(), filters: { q: `${pick(WORDS)} ${pick(WORDS).slice(0, 4)}` }, sort: { by: 'relevance' } }),
  facets: () => ({ ...base(), facets: ['status', 'propertyType', 'city'] }),
  sorted: () => ({ ...base(), sort: { by: 'listPrice', direction: pick(['asc', 'desc'] as const) } }),
};

async function main(): Promise<void> {
  rmSync(FILE, { force: true });
  rmSync(`${FILE}-wal`, { force: true });
  rmSync(`${FILE}-shm`, { force: true });
  const index = new SqliteListingIndex(FILE);
  await index.open();
  const started = performance.now();
  const { indexed } = await index.replaceAll(async function* () {
    for (let i = 0; i < COUNT; i += 1000)
      yield Array.from({ length: Math.min(1000, COUNT - i) }, (_, j) => listingAt(i + j));
  });
  console.log(`indexed ${indexed} listings in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  // Upserts one at a time, as events arrive.
  const one = performance.now();
  for (let i = 0; i < 1000; i++) await index.upsert([listingAt(COUNT + i)]);
  console.log(`1000 single upserts: ${((performance.now() - one) / 1000).toFixed(3)} ms each`);

  const kinds: Array<[string, () => Promise<number>, () => ListingSearch]> = Object.entries(KINDS).map(
    ([name, make]) => [
      name,
      async () => {
        const search = make();
        const t = performance.now();
        await index.search(search);
        return performance.now() - t;
      },
      make,
    ],
  );
  const secondPage = async () => {
    const search: ListingSearch = {
      ...base(),
      sort: { by: 'listPrice', direction: 'asc' },
      filters: { status: ['active'] },
    };
    const first = await index.search(search);
    const t = performance.now();
    await index.search({ ...search, after: first.next! });
    return performance.now() - t;
  };
  kinds.push([
    'second page',
    secondPage,
    () => ({
      ...base(),
      sort: { by: 'listPrice', direction: 'asc' },
      filters: { status: ['active'] },
      after: { value: 300000, id: 'lst_x' },
    }),
  ]);

  console.log('\nkind          p50 ms   p95 ms   max ms   sample total');
  for (const [name, run, make] of kinds) {
    for (let i = 0; i < 20; i++) await run();
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) times.push(await run());
    times.sort((a, b) => a - b);
    const total = (await index.search(make())).total;
    const at = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))].toFixed(2).padStart(8);
    console.log(`${name.padEnd(12)} ${at(0.5)} ${at(0.95)} ${at(0.999)}   ${total}`);
  }
  if (process.env.PLANS) {
    for (const [name, , make] of kinds) console.log(`\n${name}\n${index.explain(make()).join('\n')}`);
  }
  await index.close();
  const size = statSync(FILE).size + (statSync(`${FILE}-wal`, { throwIfNoEntry: false })?.size ?? 0);
  console.log(`\nfile ${(size / 1048576).toFixed(1)} MiB, RSS ${(process.memoryUsage().rss / 1048576).toFixed(0)} MiB`);
}

void main();
