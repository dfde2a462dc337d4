import { firstStartBanner } from '@estate/gateway';
import { closeOnSignals } from '@estate/platform/lifecycle';
import { exitOnConfigError } from '@estate/platform/config';
import { createLogger } from '@estate/platform/logging';
import { composeEmbedded } from './compose';
import { loadConfig, type EmbeddedConfig } from './config';

async function main(): Promise<void> {
  let config: EmbeddedConfig;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    exitOnConfigError(err);
  }
  const log = createLogger({ service: 'embedded', level: config.logLevel });
  const product = await composeEmbedded(config, log);
  closeOnSignals(log, () => product.close());
  await product.app.listen({ port: config.port, host: config.host });
  process.stdout.write(firstStartBanner(product.boot, `http://${config.host}:${config.port}`));
  log.info({ url: `http://${config.host}:${config.port}`, docs: `http://${config.host}:${config.port}/docs`, dataDir: config.dataDir }, 'embedded profile ready');
}

main().catch((err) => {
  process.stderr.write(`Failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
