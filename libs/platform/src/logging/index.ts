import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

/** Paths redacted from every log line: credentials and signed identity never reach the logs. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers["x-estate-signature"]',
  'req.headers["x-estate-identity"]',
  'headers.authorization',
  'authorization',
  'secret',
  '*.secret',
  'apiKey',
  '*.apiKey',
  'password',
  '*.password',
];

/**
 * The process's logger: pino JSON lines, or readable lines (pino-pretty, in-process) when `pretty` is true, or
 * when it is not given and standard output is a terminal.
 */
export function createLogger(options: {
  service: string;
  level?: string;
  pretty?: boolean;
  destination?: pino.DestinationStream;
}): Logger {
  const pretty = options.destination ? false : (options.pretty ?? process.stdout.isTTY === true);
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: options.service },
      redact: { paths: redactPaths, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination ?? (pretty ? prettyStream() : undefined),
  );
}

/** pino-pretty, when it is installed (it is a development dependency): JSON lines otherwise. */
function prettyStream(): pino.DestinationStream | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const pinoPretty = require('pino-pretty') as (o: object) => pino.DestinationStream;
    return pinoPretty({ colorize: process.stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', sync: true });
  } catch {
    return undefined;
  }
}

/**
 * A child logger whose lines name `service` once: pino appends a child's bindings to its parent's, so
 * `child({ service })` under a logger that already has one would write the field twice.
 */
export function serviceLogger(parent: Logger, service: string): Logger {
  const child = parent.child({});
  const holder = child as unknown as Record<symbol, string>;
  const chindings = pino.symbols.chindingsSym;
  holder[chindings] =
    `${holder[chindings].replace(/,"service":"(?:[^"\\]|\\.)*"/g, '')},"service":${JSON.stringify(service)}`;
  return child;
}
