/**
 * The database as the server uses it: opened with the storage watch and the server's settings,
 * checked and prepared before anything runs, its plain secrets sealed.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Keyring } from '../config/keyring.js';
import type { Config } from '../config/settings.js';
import { type DatabaseHandle, DatabaseMissing, openDatabase } from '../db/connect.js';
import { releaseAllLeases } from '../db/stores/matches.js';
import { schemaStatus, syncSchema } from '../db/migrate.js';
import { isStorageFull, StorageWatch } from '../db/storage-full.js';
import { loadLiveSubscriptions, loadSubscriptionsWithState } from '../db/stores/live-subscriptions-load.js';
import type { MatchableRow } from '../db/stores/subscriptions.js';
import type { SubscriptionsState } from '../db/stores/subscriptions-fingerprint.js';
import type { LiveMatcher } from '../matching/live-matcher.js';
import { sealStoredSecrets } from '../subscriptions/seal-at-rest.js';
import { PROGRAM } from './program.js';

/** The database, opened as the server uses it; undefined (and said why) when it cannot be. */
export function openServerDatabase(config: Config, log: FastifyBaseLogger): DatabaseHandle | undefined {
  try {
    return openDatabase(config.databaseUrl, {
      storage: storageWatch(log),
      create: false,
      timeoutMs: config.databaseTimeoutMs,
      boundStatements: true,
      applicationName: `${PROGRAM} ${process.pid}`,
      // Only the message and code: pg hangs the whole client (its settings included) on the error.
      onConnectionError: (error) =>
        log.warn(
          { error: error.message, code: (error as { code?: unknown }).code },
          'a database connection failed; it is replaced when next needed',
        ),
      onThreadFailure: (error) => {
        log.fatal({ err: error }, 'exiting: the SQLite thread failed; rows in flight return to the queue when their leases expire');
        process.exit(1);
      },
    });
  } catch (error) {
    if (error instanceof DatabaseMissing) {
      console.error(`${PROGRAM}: the database schema is out of date (${error.message}): run \`svc-notifications-cmd dbsync\` to create it`);
      return undefined;
    }
    console.error(`${PROGRAM}: cannot open the database: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}

/**
 * Checks that the schema is current, takes back this instance's earlier leases where it is the
 * only one, and loads the live subscriptions into the matcher. Undefined (said why, database
 * closed) when the database cannot be used. On a SQLite file, which other processes may write
 * to, what it held just before the load: their commits are followed from there.
 */
export async function prepareDatabase(
  database: DatabaseHandle,
  matcher: LiveMatcher,
): Promise<{ loadedFrom: SubscriptionsState | undefined } | undefined> {
  try {
    // Nothing but this process can reach an in-memory database, so no dbsync could prepare it.
    if (database.inMemory) await syncSchema(database);
    const status = await schemaStatus(database);
    if (status.pending.length > 0) {
      console.error(
        `${PROGRAM}: the database schema is out of date (${database.description} lacks ${status.pending.join(', ')}): run \`svc-notifications-cmd dbsync\``,
      );
      await database.close();
      return undefined;
    }
    // One database serves one SQLite instance: any lease in it belonged to this instance's previous life.
    if (!database.capabilities.sharedByInstances) await releaseAllLeases(database.db);
    const load = (page: MatchableRow[]) => matcher.load(page);
    // Instances sharing PostgreSQL hear of each other's writes otherwise (subscription-sync.ts).
    if (database.capabilities.sharedByInstances) {
      await loadLiveSubscriptions(database.db, load);
      return { loadedFrom: undefined };
    }
    const loadedFrom = await loadSubscriptionsWithState(database.db, load);
    return { loadedFrom: database.inMemory ? undefined : loadedFrom };
  } catch (error) {
    console.error(`${PROGRAM}: cannot use the database ${database.description}: ${error instanceof Error ? error.message : String(error)}`);
    await database.close();
    return undefined;
  }
}

/** Seals what is stored plain (see seal-at-rest.ts); a failure is logged and left for the next start. */
export async function sealPlainSecrets(database: DatabaseHandle, keyring: Keyring, log: FastifyBaseLogger): Promise<void> {
  try {
    const count = await sealStoredSecrets(database, keyring);
    if (count > 0) log.info({ subscriptions: count }, 'sealed stored secrets with NOTIFICATIONS_SECRET_KEY');
  } catch (error) {
    log.warn({ err: error }, 'could not seal stored secrets; they stay readable, and sealing is tried again at the next start');
  }
}

/** `report`, except for a write refused for lack of space: the storage watch says so, once a minute at most. */
export function unlessStorageFull(report: (error: unknown) => void): (error: unknown) => void {
  return (error) => {
    if (!isStorageFull(error)) report(error);
  };
}

/**
 * Writes refused for lack of space, said when it begins, then at most once a minute while it
 * lasts (each refused request and runner write would otherwise log a line), and when it ends.
 */
function storageWatch(log: FastifyBaseLogger): StorageWatch {
  return new StorageWatch({
    full: (error, refused) =>
      log.error(
        { err: error, refused },
        "storage full: writes are refused until one succeeds; requests that write answer 503 STORAGE_FULL, and outcomes of deliveries and policy calls are kept until then; free space on the database's volume (said again at most once a minute while it lasts)",
      ),
    recovered: (fullForMs, refused) => log.warn({ fullForMs, refused }, 'storage: a write succeeded; writes are taken again'),
  });
}
