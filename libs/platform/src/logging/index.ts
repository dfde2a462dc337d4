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
 * when it is not given and standard output is a terminal (never when a destination is given without `pretty`).
 */
export function createLogger(options: {
  service: string;
  level?: string;
  pretty?: boolean;
  destination?: pino.DestinationStream;
}): Logger {
  const pretty = options.pretty ?? (options.destination ? false : process.stdout.isTTY === true);
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: options.service },
      redact: { paths: redactPaths, censor: REDACTED },
      serializers: { req: requestSerializer },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    (pretty ? prettyStream(options.destination) : undefined) ?? options.destination,
  );
}

type LogEntry = Record<string, unknown>;

/** Refusals held for their request's completion line, at most (a refusal always precedes one). */
const HELD_REFUSALS = 1000;

/**
 * What a readable log shows of JSON entries: one line per request, from its completion line (method, URL,
 * status, milliseconds, key id, and why it was refused: the 4xx line's code, detail and failing fields, held
 * until then); the incoming-request line is left out, other entries are shown as they are.
 */
export function readableEntries(): (entry: LogEntry) => LogEntry[] {
  const held = new Map<string, LogEntry>();
  return (entry) => {
    if (entry.msg === 'incoming request') return [];
    const id = typeof entry.requestId === 'string' ? entry.requestId : undefined;
    const refusal = entry.level === 'info' && typeof entry.code === 'string' && typeof entry.status === 'number';
    if (id && refusal) {
      if (held.size >= HELD_REFUSALS) held.delete(held.keys().next().value as string);
      held.set(id, entry);
      return [];
    }
    if (entry.msg !== 'request completed') return [entry];
    const why = id ? held.get(id) : undefined;
    if (id) held.delete(id);
    const req = (entry.req ?? {}) as { method?: string; url?: string };
    const res = (entry.res ?? {}) as { statusCode?: number };
    const ms = typeof entry.responseTime === 'number' ? ` ${entry.responseTime.toFixed(1)} ms` : '';
    const key = typeof entry.keyId === 'string' ? ` key ${entry.keyId}` : '';
    const fields = Array.isArray(why?.errors)
      ? ` (${(why.errors as { path: string; message: string }[]).map((e) => `${e.path}: ${e.message}`).join('; ')})`
      : '';
    const reason = why ? ` - ${String(why.code)}: ${String(why.msg)}${fields}` : '';
    return [
      {
        level: entry.level,
        time: entry.time,
        service: entry.service,
        msg: `${req.method ?? '?'} ${req.url ?? '?'} ${res.statusCode ?? '?'}${ms}${key}${reason}`,
      },
    ];
  };
}

/**
 * Readable lines through pino-pretty (a development dependency: JSON lines when it is not installed), each entry
 * on one line (an error's stack excepted), written to `destination` or standard output.
 */
function prettyStream(destination?: pino.DestinationStream): pino.DestinationStream | undefined {
  let prettyFactory: (o: object) => (entry: LogEntry) => string;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    ({ prettyFactory } = require('pino-pretty') as { prettyFactory: typeof prettyFactory });
  } catch {
    return undefined;
  }
  const colorize = !destination && process.stdout.isTTY === true;
  const format = prettyFactory({
    colorize,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,service',
    singleLine: true,
    messageFormat: (entry: LogEntry, messageKey: string) =>
      `${entry.service ? `[${String(entry.service)}] ` : ''}${String(entry[messageKey] ?? '')}`,
  });
  const out = destination ?? pino.destination({ dest: 1, sync: true });
  const readable = readableEntries();
  return {
    write(line: string) {
      let entry: LogEntry;
      try {
        entry = JSON.parse(line) as LogEntry;
      } catch {
        out.write(line);
        return;
      }
      for (const shown of readable(entry)) out.write(format(shown));
    },
  };
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
