import { firstStartBanner } from '@estate/gateway';
import { closeOnSignals, exitOnStartFailure } from '@estate/platform/lifecycle';
import { createLogger } from '@estate/platform/logging';
import { composeEmbedded } from './compose';
import { loadConfig } from './config';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const log = createLogger({ service: 'embedded', level: config.logLevel, pretty: config.logPretty });
  const product = await composeEmbedded(config, log);
  closeOnSignals(log, () => product.close());
  await product.app.listen({ port: config.port, host: config.host });
  process.stdout.write(firstStartBanner(product.boot, `http://${config.host}:${config.port}`));
  log.info(
    {
      url: `http://${config.host}:${config.port}`,
      docs: `http://${config.host}:${config.port}/docs`,
      dataDir: config.dataDir,
    },
    'embedded profile ready',
  );
}

main().catch(exitOnStartFailure);
