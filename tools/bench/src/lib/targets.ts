import type { AddressInfo } from 'node:net';
import type { ListingIndex } from '@estate/search';
import type { BareSpec, EmbeddedSpec, TargetSpec } from './protocol';

export interface RunningTarget {
  port: number;
  close(): Promise<void>;
}

const HOST = '127.0.0.1';

function portOf(address: string | AddressInfo | null): number {
  if (address === null || typeof address === 'string') throw new Error(`unexpected listen address ${String(address)}`);
  return address.port;
}

async function startEmbedded(spec: EmbeddedSpec): Promise<RunningTarget> {
  // Loaded lazily so the parent (load generator) never pulls the product into its process.
  const [{ composeEmbedded }, { createLogger }] = await Promise.all([
    import('@estate/embedded'),
    import('@estate/platform/logging'),
  ]);
  const log = createLogger({ service: 'embedded', level: spec.logLevel });
  const listingIndex =
    spec.search?.index === 'elasticsearch' ? await elasticsearchIndex(spec.search.url, spec.search.alias) : undefined;
  const compose = () =>
    composeEmbedded(
      {
        port: 0,
        host: HOST,
        dataDir: spec.dataDir,
        adminApiKey: spec.adminApiKey,
        platformApiKey: spec.platformApiKey,
        webhooks: spec.webhooks,
        feeds: spec.feeds,
        rateLimitPerMinute: spec.rateLimitPerMinute,
        logLevel: spec.logLevel,
      },
      log,
      { listingIndex },
    );
  let product = await compose();
  if (spec.seedListings && listingIndex)
    await seedIndex(product.listingIndex, product.boot.account.id, spec.seedListings);
  else if (spec.seedListings) {
    // The first start made the account; its listings go into the stopped product's files.
    const accountId = product.boot.account.id;
    await product.close();
    const { seedListingFiles } = await import('./seed-listings');
    await seedListingFiles(spec.dataDir, accountId, spec.seedListings);
    product = await compose();
  }
  try {
    await product.app.listen({ port: 0, host: HOST });
  } catch (err) {
    await product.close();
    throw err;
  }
  return { port: portOf(product.app.server.address()), close: () => product.close() };
}

async function elasticsearchIndex(url: string, alias: string) {
  const [{ ElasticsearchListingIndex }, { default: pino }] = await Promise.all([
    import('@estate/search/elasticsearch-listing.index'),
    import('pino'),
  ]);
  return ElasticsearchListingIndex.connect(url, { alias, log: pino({ level: 'warn' }) });
}

/** Straight into Elasticsearch (the store stays empty): loading 100,000 listings through the API would take the bench's whole budget. */
async function seedIndex(index: ListingIndex, accountId: string, count: number): Promise<void> {
  const { generateListing, random } = await import('./generated-listings');
  const rnd = random(42);
  for (let i = 0; i < count; i += 2000) {
    const batch = Array.from({ length: Math.min(2000, count - i) }, (_, k) => ({
      accountId,
      listing: generateListing(i + k, rnd),
    }));
    await index.upsert(batch);
  }
  await index.refresh();
}

async function startBare(spec: BareSpec): Promise<RunningTarget> {
  const { default: fastify } = await import('fastify');
  const app = fastify();
  for (const route of spec.routes) {
    // Returns the object (not a pre-serialized string) so the baseline pays Fastify's usual JSON serialization.
    app.route({
      method: route.method,
      url: route.url,
      handler: async (_request, reply) => reply.code(route.status ?? 200).send(route.body),
    });
  }
  await app.listen({ port: 0, host: HOST });
  return { port: portOf(app.server.address()), close: () => app.close() };
}

export function startTarget(spec: TargetSpec): Promise<RunningTarget> {
  switch (spec.kind) {
    case 'embedded':
      return startEmbedded(spec);
    case 'bare':
      return startBare(spec);
  }
}
