import { firstStartBanner } from '@estate/gateway';
import { announceListening, closeOnSignals, exitOnStartFailure, listeningUrl } from '@estate/platform/lifecycle';
import { createLogger } from '@estate/platform/logging';
import { composeEmbedded } from './compose';
import { loadConfig } from './config';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const log = createLogger({ service: 'embedded', level: config.logLevel, pretty: config.logPretty });
  const product = await composeEmbedded(config, log);
  closeOnSignals(log, () => product.close());
  await product.app.listen({ port: config.port, host: config.host });
  const url = listeningUrl(product.app, config.host);
  process.stdout.write(firstStartBanner(product.boot, url));
  log.info({ url, docs: `${url}/docs`, dataDir: config.dataDir }, 'embedded profile ready');
  announceListening(url);
}

main().catch(exitOnStartFailure);
