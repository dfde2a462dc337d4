import { existsSync } from 'node:fs';
import { buildDist } from './build';
import { engineUrl, type EngineVar } from './engines';

/**
 * Process tests (the CLI's, the system tier) run the bundles in dist/: build them once here, before the
 * workers start, so parallel test files never rebuild `dist/` under each other's feet. Jest runs this for
 * the int and system projects only (jest.config.js): unit runs build nothing.
 */
function buildProcessesOnce(): void {
  try {
    buildDist();
    process.env.ESTATE_DIST_BUILT = '1';
  } catch {
    // Left to the process tests, which build again and fail with the bundler's message.
    process.stderr.write('[setup] building dist/ failed; process tests will retry the build\n');
  }
}

/**
 * When an engine URL is missing and a Docker engine is reachable, start that engine with
 * testcontainers and export its URL to the test workers. Otherwise leave things as they are:
 * suites then skip loudly, or fail under REQUIRE_ENGINES=1.
 */
export default async function globalSetup(): Promise<void> {
  buildProcessesOnce();
  const missing = (['MONGODB_URL', 'NATS_URL', 'ELASTICSEARCH_URL'] as EngineVar[]).filter((v) => !engineUrl(v));
  const dockerReachable = !!process.env.DOCKER_HOST || existsSync('/var/run/docker.sock');
  if (missing.length === 0 || !dockerReachable || process.env.TESTCONTAINERS_DISABLED === '1') return;

  const { GenericContainer, Wait } = await import('testcontainers');
  const started: { stop(): Promise<unknown> }[] = [];
  for (const variable of missing) {
    if (variable === 'NATS_URL') {
      const c = await new GenericContainer('nats:2.10').withCommand(['-js']).withExposedPorts(4222).start();
      started.push(c);
      process.env.NATS_URL = `nats://${c.getHost()}:${c.getMappedPort(4222)}`;
    } else if (variable === 'MONGODB_URL') {
      const c = await new GenericContainer('mongo:7')
        .withCommand(['--replSet', 'rs0', '--bind_ip_all'])
        .withExposedPorts(27017)
        .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
        .start();
      await c.exec([
        'mongosh',
        '--quiet',
        '--eval',
        "rs.initiate({_id:'rs0',members:[{_id:0,host:'localhost:27017'}]})",
      ]);
      started.push(c);
      process.env.MONGODB_URL = `mongodb://${c.getHost()}:${c.getMappedPort(27017)}/estate?directConnection=true`;
    } else {
      const c = await new GenericContainer('docker.elastic.co/elasticsearch/elasticsearch:8.19.2')
        .withEnvironment({
          'discovery.type': 'single-node',
          'xpack.security.enabled': 'false',
          ES_JAVA_OPTS: '-Xms512m -Xmx512m',
        })
        .withExposedPorts(9200)
        .withWaitStrategy(Wait.forHttp('/_cluster/health', 9200))
        .start();
      started.push(c);
      process.env.ELASTICSEARCH_URL = `http://${c.getHost()}:${c.getMappedPort(9200)}`;
    }
  }
  (globalThis as { __estateContainers?: typeof started }).__estateContainers = started;
}
