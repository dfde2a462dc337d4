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

/** Lead routes: their query values are about people (`q` searches names, emails and phones). */
const LEAD_PATH = /^\/v1\/leads(?:[/?]|$)/i;
/** The query parameters of lead routes whose values say nothing about a person; the others are redacted. */
const IMPERSONAL_LEAD_PARAMETER =
  /^(?:limit|cursor|sort|status|agentId|source|listingId|minScore|maxScore|createdFrom|createdTo|activityFrom|activityTo)$/;
const EMAIL_SHAPE = /[^\s@/?&=]+@[^\s@/?&=]+\.[^\s@/?&=]+/;

/** Text as written, or decoded from a URL when it decodes. */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/** True for text that is, or holds, an email address or a phone number (10 to 15 digits, or `+` and 7 or more). */
export function looksPersonal(text: string): boolean {
  if (EMAIL_SHAPE.test(text)) return true;
  const digits = text.replace(/[\s().-]/g, '');
  return /^\+\d{7,15}$/.test(digits) || /^\d{10,15}$/.test(digits);
}

/**
 * A URL as it may be logged: the values of secret-looking query parameters (`?api_key=`, `?token=`,
 * `?access_token=`...) and anything shaped like an API key replaced. Keys are only accepted in the
 * Authorization header, but a client that puts one in the URL must not find it in the logs. Personal
 * data is left out too: every value of a lead route's query but the impersonal ones (a lead search's
 * `q`), and any path segment or query value that is an email address or a phone number.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = (q < 0 ? url : url.slice(0, q))
    .split('/')
    .map((segment) => (looksPersonal(decoded(segment)) ? REDACTED : segment))
    .join('/');
  const leads = LEAD_PATH.test(path);
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
            const plain = decoded(name);
            const hidden =
              SECRET_PARAMETER.test(plain) ||
              SECRET_PARAMETER.test(name) ||
              (leads && !IMPERSONAL_LEAD_PARAMETER.test(plain)) ||
              looksPersonal(decoded(pair.slice(eq + 1)));
            return hidden ? `${name}=${REDACTED}` : pair;
          })
          .join('&');
  return redactKeys(query === undefined ? path : `${path}?${query}`);
}

/** An email address or a phone number inside free text (a phone is kept unless it has 10 to 15 digits). */
const PERSONAL_IN_TEXT = /[^\s@/?&="'<>]+@[^\s@/?&="'<>]+\.[A-Za-z0-9-]+|(?<![\w+])\+?\(?\d[\d\s().-]{5,}\d(?!\w)/g;

/**
 * Text with anything shaped like an API key, an email address or a phone number replaced: messages echo
 * what a client sent (a key or an email where an id belongs), and logs keep neither secrets nor personal data.
 */
export function redactKeys(text: string): string {
  return text
    .replace(API_KEY_SHAPE, `ek_${REDACTED}`)
    .replace(PERSONAL_IN_TEXT, (found) => (looksPersonal(found) ? REDACTED : found));
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
