/**
 * The database not answering, or not reachable: a condition of the moment, not a fault of the
 * request (an answer of 503 with Retry-After, never 500). What the drivers throw in that case
 * is recognised here, once, so that neither the routes nor the stages need know pg's or
 * SQLite's words for it.
 */
export class DatabaseUnavailable extends Error {
  override readonly name = 'DatabaseUnavailable';
}

/**
 * PostgreSQL SQLSTATEs that say the server is going away, refusing, or gave up a statement:
 * class 08 (connection exception) is matched by its prefix.
 * 57P01 admin_shutdown (pg_terminate_backend, a restart), 57P02 crash_shutdown,
 * 57P03 cannot_connect_now (starting up, a failover), 53300 too_many_connections,
 * 57014 query_canceled (the statement time-out).
 */
const POSTGRES_STATES = new Set(['57P01', '57P02', '57P03', '53300', '57014']);
/** Socket failures on the way to PostgreSQL (a client's own connection fails with the same codes: the caller tells them apart). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** pg's own words for a connection that ended or never came (it gives them no code). */
const PG_CONNECTION_MESSAGES =
  /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Client was closed)/;

/** True for an error that means "the database is not answering now; try again later". */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailable) return true;
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (POSTGRES_STATES.has(code) || /^08[0-9A-Z]{3}$/.test(code) || NETWORK_CODES.has(code)) return true;
    // SQLite: another connection (the CLI's eventpurge, a backup) holds the lock past the busy time-out.
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return true;
  }
  return PG_CONNECTION_MESSAGES.test(error.message);
}
