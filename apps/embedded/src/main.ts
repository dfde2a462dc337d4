import { closeOnSignals } from '@estate/platform/lifecycle';
import { exitOnConfigError } from '@estate/platform/config';
import { createLogger } from '@estate/platform/logging';
import { composeEmbedded } from './compose';
import { loadConfig, type EmbeddedConfig } from './config';

function printKeysOnce(keys: { admin?: string; platform?: string }, accountId: string): void {
  if (!keys.admin && !keys.platform) return;
  const lines = [
    '',
    '  First start: keys for this installation (shown only now; store them safely)',
    ...(keys.admin ? [`    admin key of the default account (${accountId}):  ${keys.admin}`] : []),
    ...(keys.platform ? [`    platform key (creates accounts):  ${keys.platform}`] : []),
    '  Try:  curl -H "Authorization: Bearer <admin key>" http://127.0.0.1:3000/v1/listings',
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

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
  printKeysOnce(product.generatedKeys, product.defaultAccountId);
  log.info({ url: `http://${config.host}:${config.port}`, docs: `http://${config.host}:${config.port}/docs`, dataDir: config.dataDir }, 'embedded profile ready');
}

main().catch((err) => {
  process.stderr.write(`Failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
