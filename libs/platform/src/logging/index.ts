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

export function createLogger(options: {
  service: string;
  level?: string;
  destination?: pino.DestinationStream;
}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: options.service },
      redact: { paths: redactPaths, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination,
  );
}
