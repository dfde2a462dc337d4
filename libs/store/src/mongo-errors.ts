/**
 * Duplicate key: code 11000 from MongoDB (and from FerretDB on inserts). FerretDB v1 reports a
 * unique index broken by an *update* as InternalError (code 1) carrying its backend's error:
 * SQLite's "UNIQUE constraint failed" (extended codes 2067 / 1555) or PostgreSQL's unique
 * violation (SQLSTATE 23505).
 */
export function isDuplicateKey(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; message?: unknown; writeErrors?: { code?: unknown }[] };
  if (e.code === 11000 || e.code === 11001) return true;
  if (Array.isArray(e.writeErrors) && e.writeErrors.some((w) => w.code === 11000)) return true;
  return (
    e.code === 1 &&
    typeof e.message === 'string' &&
    /UNIQUE constraint failed|\((2067|1555)\)|SQLSTATE 23505/.test(e.message)
  );
}

/** Errors of the MongoDB driver that mean "no server answered", whatever the operation. */
const UNAVAILABLE_NAMES = new Set([
  'MongoServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoPoolClearedError',
  'MongoPoolClosedError',
  'MongoWaitQueueTimeoutError',
]);

const SOCKET_CODES = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT']);

/**
 * No server to talk to: the driver found none, or lost the connection, or FerretDB answered that its own
 * backend does not (InternalError carrying the PostgreSQL client's connection failure).
 */
export function isUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { name?: unknown; code?: unknown; message?: unknown };
  if (typeof e.name === 'string' && UNAVAILABLE_NAMES.has(e.name)) return true;
  // A socket the server closed, surfacing from the driver as the plain system error (writes after FIN).
  if (typeof e.code === 'string' && SOCKET_CODES.has(e.code)) return true;
  return (
    e.code === 1 &&
    typeof e.message === 'string' &&
    /failed to connect|connection refused|SQLSTATE 57P0[1-3]|conn closed/.test(e.message)
  );
}
