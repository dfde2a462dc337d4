import { NatsBus } from '@estate/bus';
import { exitOnConfigError } from '@estate/platform/config';
import { createHttpApp, type OpenApiDoc } from '@estate/platform/http';
import { closeOnSignals } from '@estate/platform/lifecycle';
import { createLogger } from '@estate/platform/logging';
import { exitOnStartFailure } from '@estate/platform/process';
import { MongoDocumentStore } from '@estate/store';
import { installGatewayEdge } from './app';
import { firstStartBanner } from './access.service';
import { composeGateway } from './compose';
import { loadConfig, type GatewayConfig } from './config';
import { installProxy, upstreamsFor } from './edge/proxy';
import { jobEventsRoutes } from './jobs/job-events.routes';
import { HttpJobsReader } from './jobs/jobs.reader';

/** The services' own OpenAPI documents, folded into the gateway's; a service that is down is left out. */
async function serviceDocuments(urls: string[]): Promise<OpenApiDoc[]> {
  const docs = await Promise.all(
    urls.map(async (url) => {
      try {
        const res = await fetch(`${url}/openapi.json`, { signal: AbortSignal.timeout(2000) });
        return res.ok ? ((await res.json()) as OpenApiDoc) : undefined;
      } catch {
        return undefined;
      }
    }),
  );
  return docs.filter((d): d is OpenApiDoc => d !== undefined);
}

async function main(): Promise<void> {
  let config: GatewayConfig;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    exitOnConfigError(err);
  }
  const log = createLogger({ service: 'gateway', level: config.logLevel });
  const store = await MongoDocumentStore.connect(config.mongodbUrl, { dbName: config.mongodbDatabase, log });
  const bus = await NatsBus.connect(config.natsUrl, { log, name: 'gateway', namespace: config.natsNamespace });
  const runtime = await composeGateway({ store, log });
  const boot = await runtime.access.bootstrap({ adminKey: config.adminApiKey, platformKey: config.platformApiKey });
  const upstreamUrls = Object.values(config.upstreams);
  const app = await createHttpApp({
    service: 'gateway',
    logger: log,
    bodyLimit: 5 * 1024 * 1024,
    readiness: {
      store: () => store.ping(),
      bus: () => bus.ping(),
      ...Object.fromEntries(
        Object.entries(config.upstreams).map(([name, url]) => [
          name,
          async () => {
            const res = await fetch(`${url}/health/ready`, { signal: AbortSignal.timeout(1500) });
            if (!res.ok) throw new Error(`${name} answered ${res.status}`);
          },
        ]),
      ),
    },
    openapi: { title: 'Estate listings and leads API', merge: () => serviceDocuments(upstreamUrls) },
  });
  await installGatewayEdge(app, runtime, { rateLimitPerMinute: config.rateLimitPerMinute });
  // Served here rather than proxied: the gateway relays the workers' NATS progress notifications.
  await app.register(jobEventsRoutes, { bus, jobs: new HttpJobsReader({ listingsUrl: config.upstreams.listings, signingSecret: config.signingSecret }) });
  await installProxy(app, { upstreams: upstreamsFor(config.upstreams), signingSecret: config.signingSecret, jsonBodyLimit: 5 * 1024 * 1024, uploadBodyLimit: 600 * 1024 * 1024 });
  await app.ready();
  await runtime.start();
  closeOnSignals(log, async () => {
    await app.close();
    await runtime.stop();
    await bus.close();
    await store.close();
  });
  await app.listen({ port: config.port, host: config.host });
  process.stdout.write(firstStartBanner(boot, `http://${config.host}:${config.port}`));
}

main().catch(exitOnStartFailure);
