// Believable sandbox data for a new account, written through the public API (the typed client), so that it
// goes through the same validation, events, search indexing and media processing as any integrator's data.
// Deterministic (a seeded generator) and safe to run twice: listings are keyed by externalId + source, agents
// by email, rules by name, leads by email (the API never duplicates a person), photos only where none exist.
import { unwrap, type EstateClient, type Schemas } from '@estate/client';
import sharp from 'sharp';

const SOURCE = 'sandbox-mls';

/** mulberry32: small, seeded, good enough for made-up data. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const AREAS = [
  { city: 'Austin', state: 'TX', postal: '78701', lat: 30.268, lng: -97.743, hood: 'Downtown' },
  { city: 'Austin', state: 'TX', postal: '78704', lat: 30.243, lng: -97.765, hood: 'Bouldin Creek' },
  { city: 'Austin', state: 'TX', postal: '78702', lat: 30.262, lng: -97.72, hood: 'East Cesar Chavez' },
  { city: 'Round Rock', state: 'TX', postal: '78664', lat: 30.508, lng: -97.679, hood: 'Old Town' },
  { city: 'Cedar Park', state: 'TX', postal: '78613', lat: 30.505, lng: -97.82, hood: 'Buttercup Creek' },
];
const STREETS = ['Oak', 'Maple', 'Congress', 'Barton Springs', 'Lamar', 'Riverside', 'Pecan', 'Mesquite', 'Bluebonnet'];
const SUFFIXES = ['St', 'Ave', 'Blvd', 'Ln', 'Dr'];
const FEATURES = ['garage', 'pool', 'fireplace', 'hardwood floors', 'solar panels', 'covered patio', 'home office'];
const KINDS = [
  { type: 'residential', sub: 'single_family', words: 'family home' },
  { type: 'residential', sub: 'condominium', words: 'condo' },
  { type: 'residential', sub: 'townhouse', words: 'townhouse' },
  { type: 'residential_lease', sub: 'single_family', words: 'home for lease' },
  { type: 'land', sub: 'unimproved_land', words: 'lot' },
] as const;
const STATUSES = ['active', 'active', 'active', 'active', 'coming_soon', 'pending', 'active_under_contract', 'closed'];
const PALETTE = ['#8fb3a5', '#c9a66b', '#7a8fb5', '#b57a7a', '#9bb57a', '#a07ab5'];

export const AGENTS = [
  { name: 'Casey Morgan', email: 'casey.morgan@sandbox.example', phone: '+15125550101', areas: ['78701', '78702'] },
  { name: 'Priya Natarajan', email: 'priya.natarajan@sandbox.example', phone: '+15125550102', areas: ['78704'] },
  { name: 'Diego Alvarez', email: 'diego.alvarez@sandbox.example', phone: '+15125550103', areas: ['Round Rock'] },
  { name: 'Morgan Blake', email: 'morgan.blake@sandbox.example', phone: '+15125550104', areas: ['Cedar Park'] },
];

const PEOPLE = [
  'Jordan Reyes',
  'Avery Chen',
  'Sam Okafor',
  'Riley Thompson',
  'Taylor Nguyen',
  'Jamie Patel',
  'Alex Romero',
  'Chris Walker',
  'Drew Kim',
  'Quinn Foster',
  'Harper Singh',
  'Rowan Ellis',
];
const LEAD_SOURCES = ['Zillow', 'Website', 'Open house', 'Referral', 'Realtor.com'];

export interface SeedSummary {
  listings: number;
  photos: number;
  agents: number;
  rules: number;
  leads: number;
  activities: number;
}

/** A photo-like JPEG: a sky, a lawn and a house shape, with the address written on it. */
async function photo(label: string, color: string, variant: number): Promise<Uint8Array> {
  const roofY = 200 + variant * 20;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="800">
    <defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#9cc9ef"/><stop offset="1" stop-color="#e6f2fb"/></linearGradient></defs>
    <rect width="1200" height="800" fill="url(#sky)"/>
    <rect y="560" width="1200" height="240" fill="#6f9e55"/>
    <polygon points="300,${roofY + 140} 600,${roofY} 900,${roofY + 140}" fill="#6b4f3a"/>
    <rect x="340" y="${roofY + 140}" width="520" height="${420 - roofY}" fill="${color}"/>
    <rect x="560" y="440" width="80" height="120" fill="#4b3a2c"/>
    <rect x="400" y="${roofY + 190}" width="110" height="90" fill="#dfeef7"/>
    <rect x="690" y="${roofY + 190}" width="110" height="90" fill="#dfeef7"/>
    <text x="40" y="760" font-family="sans-serif" font-size="44" fill="#ffffff">${label}</text>
  </svg>`;
  return new Uint8Array(await sharp(Buffer.from(svg)).jpeg({ quality: 80 }).toBuffer());
}

const pick = <T>(rnd: () => number, items: readonly T[]): T => items[Math.floor(rnd() * items.length)];

function listingBodies(count: number): Schemas['ListingCreate'][] {
  const rnd = random(42);
  return Array.from({ length: count }, (_, i) => {
    const area = AREAS[i % AREAS.length];
    const kind = KINDS[i % 7 === 6 ? 4 : i % 4];
    const beds = kind.type === 'land' ? undefined : 1 + Math.floor(rnd() * 5);
    const sqft = kind.type === 'land' ? undefined : 650 + Math.round(rnd() * 30) * 100;
    const lease = kind.type === 'residential_lease';
    const price = lease
      ? 1500 + Math.round(rnd() * 40) * 50
      : Math.round(((sqft ?? 900) * (220 + rnd() * 260)) / 1000) * 1000;
    const street = `${100 + Math.floor(rnd() * 8800)} ${pick(rnd, STREETS)} ${pick(rnd, SUFFIXES)}`;
    const features = FEATURES.filter(() => rnd() < 0.35);
    return {
      externalId: `SBX-${String(1001 + i)}`,
      source: SOURCE,
      mlsNumber: String(5_200_000 + i * 37),
      status: STATUSES[i % STATUSES.length] as Schemas['ListingCreate']['status'],
      pricing: { listPrice: price, currency: 'USD' },
      propertyDetails: {
        propertyType: kind.type,
        propertySubType: kind.sub,
        ...(beds !== undefined ? { bedrooms: beds, bathrooms: Math.max(1, beds - 1) + (rnd() < 0.5 ? 0.5 : 0) } : {}),
        ...(sqft !== undefined ? { livingArea: sqft, livingAreaUnits: 'sqft' as const } : {}),
        lotSize: 2000 + Math.round(rnd() * 80) * 100,
        ...(kind.type === 'land' ? {} : { yearBuilt: 1950 + Math.floor(rnd() * 74) }),
        description: `${beds ? `${beds}-bedroom ` : ''}${kind.words} in ${area.hood}, ${area.city}. ${
          features.length ? `Features ${features.join(', ')}.` : 'Ready for your ideas.'
        }`,
        features,
      },
      location: {
        address: { street, city: area.city, stateOrProvince: area.state, postalCode: area.postal, country: 'US' },
        latitude: Number((area.lat + (rnd() - 0.5) * 0.03).toFixed(5)),
        longitude: Number((area.lng + (rnd() - 0.5) * 0.03).toFixed(5)),
      },
    };
  });
}

async function all<T>(iterator: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of iterator) out.push(x);
  return out;
}

/** Fills the account the client's key belongs to; `log` hears what happens. */
export async function seedSandbox(
  client: EstateClient,
  options: { listings?: number; log?: (line: string) => void } = {},
): Promise<SeedSummary> {
  const log = options.log ?? (() => {});
  const summary: SeedSummary = { listings: 0, photos: 0, agents: 0, rules: 0, leads: 0, activities: 0 };

  // Listings: one bulk job creates them (or updates the ones a previous run created).
  const bodies = listingBodies(options.listings ?? 24);
  const { jobId } = unwrap(await client.POST('/v1/listings/bulk', { body: { listings: bodies } }));
  for await (const progress of client.followJob(jobId))
    log(`listings: ${progress.state} ${progress.progress.processed}/${progress.progress.total}`);
  const job = unwrap(await client.GET('/v1/jobs/{id}', { params: { path: { id: jobId } } }));
  if (job.state !== 'succeeded') throw new Error(`Seeding listings ended ${job.state}: ${JSON.stringify(job.errors)}`);
  summary.listings = job.results.length;
  log(`listings: ${job.results.filter((r) => r.action === 'created').length} created, ${summary.listings} in all`);

  // Photos (and a virtual tour on some): only on listings that have none yet.
  const ids = job.results.map((r) => r.id);
  for (const [i, id] of ids.entries()) {
    const existing = unwrap(await client.GET('/v1/listings/{id}/media', { params: { path: { id } } }));
    if (existing.items.length > 0) continue;
    const body = bodies[i];
    const label = `${body.location.address.street}, ${body.location.address.city}`;
    const color = PALETTE[i % PALETTE.length];
    const items = await client.uploadImages(id, [
      { data: await photo(label, color, 0), filename: 'front.jpg', caption: 'Front' },
      { data: await photo(label, color, 3), filename: 'street.jpg', caption: 'From the street' },
      ...(i % 3 === 0 ? [{ data: await photo(label, color, 6), filename: 'side.jpg', caption: 'Side yard' }] : []),
    ]);
    summary.photos += items.length;
    if (i % 4 === 0)
      unwrap(
        await client.POST('/v1/listings/{id}/media', {
          params: { path: { id } },
          body: { type: 'virtual_tour', url: `https://tours.sandbox.example/${body.externalId}`, caption: '3D tour' },
        }),
      );
  }
  log(`photos: ${summary.photos} uploaded; waiting for their renditions`);
  // Renditions are made in the background: wait for them, so that a product started next shows every photo.
  const deadline = Date.now() + 180_000;
  for (const id of ids) {
    for (;;) {
      const media = unwrap(await client.GET('/v1/listings/{id}/media', { params: { path: { id } } }));
      if (media.items.every((m) => m.status !== 'processing')) break;
      if (Date.now() > deadline) throw new Error('Photos are still processing after 3 minutes');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  // Agents, the team default and two routing rules.
  const agents = await all(client.list('/v1/agents'));
  const agentIds: string[] = [];
  for (const a of AGENTS) {
    const found = agents.find((x) => x.email === a.email);
    agentIds.push(found ? found.id : unwrap(await client.POST('/v1/agents', { body: { ...a, capacity: 30 } })).id);
  }
  summary.agents = agentIds.length;
  unwrap(
    await client.PUT('/v1/routing/settings', { body: { defaultAgentIds: agentIds, defaultStrategy: 'least_loaded' } }),
  );
  const rules = await all(client.list('/v1/routing/rules'));
  const wanted: Schemas['RoutingRuleCreate'][] = [
    {
      name: 'Luxury downtown',
      priority: 10,
      conditions: { minPrice: 750000, postalCodes: ['78701', '78704'] },
      strategy: 'round_robin',
      agentIds: [agentIds[0], agentIds[1]],
    },
    {
      name: 'Referrals to a senior agent',
      priority: 20,
      conditions: { sources: ['referral'] },
      strategy: 'specific_agent',
      agentIds: [agentIds[2]],
    },
  ];
  for (const rule of wanted) {
    if (rules.some((r) => r.name === rule.name)) continue;
    unwrap(await client.POST('/v1/routing/rules', { body: rule }));
    summary.rules += 1;
  }
  log(`agents: ${summary.agents}; routing rules added: ${summary.rules}`);

  // Leads with interests, routed, with a timeline of what agents did.
  const rnd = random(7);
  const steps: Schemas['LeadPatch']['status'][] = ['contacted', 'qualified', 'showing', 'offer'];
  for (const [i, name] of PEOPLE.entries()) {
    const email = `${name.toLowerCase().replace(/\s+/g, '.')}@sandbox.example`;
    const listingId = ids[(i * 5) % ids.length];
    const captured = unwrap(
      await client.POST('/v1/leads', {
        body: {
          name,
          email,
          phone: `512-555-${String(200 + i).padStart(4, '0')}`,
          source: LEAD_SOURCES[i % LEAD_SOURCES.length],
          message: `Hi, I am interested in ${bodies[(i * 5) % ids.length].location.address.street}. Is it still available?`,
          propertyInterests: [{ listingId }],
          autoRoute: true,
        },
      }),
    );
    summary.leads += 1;
    if (captured.duplicate) continue;
    const activities: Schemas['ActivityCreate'][] = [
      { type: 'email', summary: 'Sent the listing sheet and photos', listingId },
      { type: 'call', summary: 'Talked about budget and timing', data: { durationSeconds: 180 + i * 20 } },
      ...(i % 2 === 0 ? [{ type: 'property_view' as const, summary: 'Toured the property', listingId }] : []),
      ...(i % 3 === 0 ? [{ type: 'note' as const, summary: 'Pre-approved with a local lender' }] : []),
    ];
    for (const [k, activity] of activities.entries()) {
      const occurredAt = new Date(Date.now() - (activities.length - k) * 86_400_000 * (1 + rnd())).toISOString();
      unwrap(
        await client.POST('/v1/leads/{id}/activities', {
          params: { path: { id: captured.id } },
          body: { ...activity, occurredAt },
        }),
      );
      summary.activities += 1;
    }
    const stage = steps[i % steps.length];
    unwrap(await client.PATCH('/v1/leads/{id}', { params: { path: { id: captured.id } }, body: { status: stage } }));
  }
  log(`leads: ${summary.leads} with ${summary.activities} activities`);
  return summary;
}
