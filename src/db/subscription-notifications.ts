/**
 * PostgreSQL LISTEN/NOTIFY for subscription writes, so that several instances on one database
 * hear of each other's writes at once (the polling in `matching/subscription-sync.ts` is the
 * fallback). A write sends `pg_notify(channel, <subscription uuid>)` in its own statement:
 * PostgreSQL delivers it on commit, and never for a write rolled back.
 *
 * The channel is one per schema, computed by the server from `current_schema()` on both sides,
 * so that writers and listeners agree whatever the search_path, and deployments (or tests)
 * sharing a database in different schemas do not hear each other.
 */
import { type AliasedRawBuilder, type RawBuilder, sql } from 'kysely';
import pg from 'pg';
import { Backoff } from '../time/backoff.js';
import { Pause } from '../time/pause.js';
import { postgresTarget } from './postgres-target.js';

/** Channel names are identifiers: 63 bytes at most. A longer schema name is hashed (md5: 32). */
const channelOf = (prefix: string) =>
  `case when octet_length(current_schema()) <= ${63 - prefix.length} then '${prefix}' || current_schema() else '${prefix}' || md5(current_schema()) end`;
const CHANNEL = channelOf('notifications_subscriptions_');
/** Pull rows became readable: the payload is their subscription's uuid (pull/waiters.ts wakes its readers). */
const READABLE_CHANNEL = channelOf('notifications_readable_');

/**
 * Rows went back to the queue for anyone to claim (given back, released at shutdown, routed
 * again by `eventretry`): instances whose runners wait idle claim now rather than at their
 * next poll. No payload is needed; PostgreSQL sends one per transaction.
 */
const QUEUE_CHANNEL = channelOf('notifications_queue_');

/** Tells every instance, on commit, that rows wait in the queue for a claim. */
export function queueNotification(): RawBuilder<unknown> {
  return sql`select pg_notify(${sql.raw(QUEUE_CHANNEL)}, 'queued')`;
}

/** Tells every instance, on commit, that these subscriptions have new readable rows. */
export function readableNotification(subscriptions: readonly string[]): RawBuilder<unknown> {
  return sql`select ${sql.join(subscriptions.map((uuid) => sql`pg_notify(${sql.raw(READABLE_CHANNEL)}, ${uuid})`))}`;
}

/**
 * Selected from a write's RETURNING rows (a data-modifying `with`), tells the other instances
 * of each row written when it commits: the notification costs no statement of its own.
 */
export function notificationOf(uuidColumn: string): AliasedRawBuilder<unknown, 'notified'> {
  return sql`pg_notify(${sql.raw(CHANNEL)}, ${sql.ref(uuidColumn)})`.as('notified');
}

export interface SubscriptionListenerOptions {
  /** The `postgres://` URL the service uses, `?schema=` included. */
  url: string;
  /** How the listening connection names itself in pg_stat_activity. */
  applicationName: string;
  /** A subscription was written (by any instance, this one included). */
  onNotify(uuid: string): void;
  /** Rows of a pull subscription became readable (on any instance, this one included). */
  onReadable?(subscription: string): void;
  /** Rows went back to the queue for a claim (by any instance, this one included, or the CLI). */
  onQueued?(): void;
  /** LISTEN is in place (again): writes committed before now may have gone unheard. */
  onListening(info: { channel: string; backendPid: number }): void;
  /** The connection failed or was lost; the next attempt is in `retryInMs`. */
  onLost(error: unknown, retryInMs: number): void;
  /** Reconnection back-off: doubles from the first delay up to the last. */
  backoffMs?: { first: number; max: number };
  /**
   * A connection that only listens never sends, so a dead peer would go unnoticed: it is
   * probed this often (a round trip that commits nothing: syncRoundTrip), and given up when a
   * probe takes as long.
   */
  probeMs?: number;
}

export interface SubscriptionListener {
  /** LISTEN is in place on a live connection. */
  readonly listening: boolean;
  /** The listening connection's server process (for pg_terminate_backend, and logs). */
  readonly backendPid: number | undefined;
  close(): Promise<void>;
}

const CLOSE_WAIT_MS = 2_000;

/** Listens on a connection of its own (not the pool's), reconnecting for as long as it runs. */
export function startSubscriptionListener(options: SubscriptionListenerOptions): SubscriptionListener {
  const backoff = options.backoffMs ?? { first: 250, max: 10_000 };
  const probeMs = options.probeMs ?? 10_000;
  const config = clientConfig(options.url, options.applicationName, probeMs);
  let closed = false;
  let client: pg.Client | undefined;
  let listening = false;
  let backendPid: number | undefined;
  let drop: ((reason: unknown) => void) | undefined;

  const backoffWait = new Pause();

  /** Connects and listens; resolves with the reason once the connection is lost. */
  async function listenOnce(): Promise<unknown> {
    const current = new pg.Client(config);
    client = current;
    let lose: (reason: unknown) => void = () => undefined;
    const lost = new Promise<unknown>((resolve) => (lose = resolve));
    drop = lose;
    current.on('error', (error) => lose(error));
    current.on('end', () => lose(new Error('the listening connection ended')));
    await current.connect();
    const { rows } = await current.query<{ channel: string; readable: string; queue: string }>(
      `select ${CHANNEL} as channel, ${READABLE_CHANNEL} as readable, ${QUEUE_CHANNEL} as queue`,
    );
    const channel = rows[0]?.channel;
    const readable = rows[0]?.readable;
    const queue = rows[0]?.queue;
    if (!channel || !readable || !queue) throw new Error('no current schema: cannot name the notification channel');
    current.on('notification', (message) => {
      if (!message.payload) return;
      if (message.channel === channel) options.onNotify(message.payload);
      else if (message.channel === readable) options.onReadable?.(message.payload);
      else if (message.channel === queue) options.onQueued?.();
    });
    await current.query(`listen ${current.escapeIdentifier(channel)}`);
    if (options.onReadable) await current.query(`listen ${current.escapeIdentifier(readable)}`);
    if (options.onQueued) await current.query(`listen ${current.escapeIdentifier(queue)}`);
    if (closed) return undefined;
    listening = true;
    backendPid = (current as unknown as { processID?: number }).processID;
    options.onListening({ channel, backendPid: backendPid ?? 0 });
    const probe = setInterval(() => {
      const timeout = setTimeout(() => lose(new Error(`the listening connection did not answer a probe in ${probeMs} ms`)), probeMs);
      timeout.unref();
      void syncRoundTrip(current).then(() => clearTimeout(timeout));
    }, probeMs);
    probe.unref();
    try {
      return await lost;
    } finally {
      clearInterval(probe);
    }
  }

  const done = (async () => {
    const delay = new Backoff(backoff.first, backoff.max);
    while (!closed) {
      let reason: unknown;
      try {
        reason = await listenOnce();
      } catch (error) {
        reason = error;
      }
      const wasListening = listening;
      listening = false;
      backendPid = undefined;
      drop = undefined;
      const failed = client;
      client = undefined;
      // A dead socket may never finish ending: do not wait for it.
      failed?.end().catch(() => undefined);
      if (closed) break;
      if (wasListening) delay.reset();
      const retryInMs = Math.round(delay.next() * (0.8 + 0.4 * Math.random()));
      options.onLost(reason, retryInMs);
      await backoffWait.for(retryInMs);
    }
  })();

  return {
    get listening() {
      return listening;
    },
    get backendPid() {
      return backendPid;
    },
    close: async () => {
      closed = true;
      backoffWait.end();
      const timeUp = () => new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref());
      const current = client;
      if (current) await Promise.race([current.end().catch(() => undefined), timeUp()]);
      // A connection that would not end, or is still connecting to a dead peer, is given up.
      drop?.(new Error('closed'));
      await Promise.race([done, timeUp()]);
    },
  };
}

/**
 * One round trip that starts no transaction: a bare Sync message, which PostgreSQL answers with
 * ReadyForQuery. A `select 1` is a transaction: as the probe, it was a commit every 10 s of an
 * idle instance. Only on a connection with no query under way (the listener's, between probes):
 * pg has no public call for it, and would take the answer for a query's. A connection that
 * fails is reported by its 'error' and 'end' events, as for a query.
 */
function syncRoundTrip(client: pg.Client): Promise<void> {
  const { connection } = client as unknown as { connection: { sync(): void; once(event: 'readyForQuery', listener: () => void): void } };
  return new Promise((resolve) => {
    connection.once('readyForQuery', () => resolve());
    connection.sync();
  });
}

/** The pool's connection settings (see postgres-target.ts): `?schema=` becomes the search_path. */
function clientConfig(url: string, applicationName: string, probeMs: number): pg.ClientConfig {
  const { connectionString, options } = postgresTarget(url);
  return {
    connectionString,
    application_name: applicationName,
    connectionTimeoutMillis: probeMs,
    keepAlive: true,
    ...(options !== undefined ? { options } : {}),
  };
}
