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

/** Query parameters whose value is never logged: anything named like a key, token, secret or password. */
const SECRET_PARAMETER = /key|token|secret|passw|pwd|signature|credential|auth|session|jwt|bearer/i;
/** An API key's shape, wherever it appears in a URL. */
const API_KEY_SHAPE = /ek_[A-Za-z0-9_-]{6,}/g;
const REDACTED = '[redacted]';

/**
 * A URL as it may be logged: the values of secret-looking query parameters (`?api_key=`, `?token=`,
 * `?access_token=`...) and anything shaped like an API key replaced. Keys are only accepted in the
 * Authorization header, but a client that puts one in the URL must not find it in the logs.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query =
    q < 0
      ? undefined
      : url
          .slice(q + 1)
          .split('&')
          .map((pair) => {
            const eq = pair.indexOf('=');
            if (eq < 0) return pair;
            const name = pair.slice(0, eq);
            let decoded = name;
            try {
              decoded = decodeURIComponent(name.replace(/\+/g, ' '));
            } catch {
              // an undecodable name is judged as written
            }
            return SECRET_PARAMETER.test(decoded) || SECRET_PARAMETER.test(name) ? `${name}=${REDACTED}` : pair;
          })
          .join('&');
  return redactKeys(query === undefined ? path : `${path}?${query}`);
}

/** Text with anything shaped like an API key replaced (a key sent where an id belongs is echoed in messages). */
export function redactKeys(text: string): string {
  return text.replace(API_KEY_SHAPE, `ek_${REDACTED}`);
}

/** The request as a log line shows it (Fastify's fields), its URL redacted. */
export function requestSerializer(req: {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}): Record<string, unknown> {
  return {
    method: req.method,
    url: typeof req.url === 'string' ? redactUrl(req.url) : req.url,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

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
      redact: { paths: redactPaths, censor: REDACTED },
      serializers: { req: requestSerializer },
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
