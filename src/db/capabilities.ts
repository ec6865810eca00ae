/** What differs between the databases, declared once: the code asks these, not which database it has. */
export interface Capabilities {
  /** Claims can skip rows another instance holds (`FOR UPDATE SKIP LOCKED`). */
  readonly skipLocked: boolean;
  /** More than one process may use the database at once. */
  readonly sharedByInstances: boolean;
  /**
   * A transaction can lock single rows against concurrent deletes (`FOR KEY SHARE`); SQLite
   * needs none, its one writer holds the whole database.
   */
  readonly rowLocks: boolean;
  /** Writes can tell the other instances when they commit (LISTEN/NOTIFY). */
  readonly notify: boolean;
  /**
   * One writer at a time for the whole database: a long run of writes (a purge) pauses between
   * batches so that the service's own writes get their turn.
   */
  readonly oneWriter: boolean;
  /** Kysely's migrator holds a lock of the database's own while it migrates (SQLite's has none). */
  readonly migrationLock: boolean;
  /** Tables live in a named schema (PostgreSQL's search_path); `public` unless the URL names one. */
  readonly schemas: boolean;
  /** One statement can write several tables (a data-modifying WITH) and take a column of rows as one array (`unnest`). */
  readonly dataModifyingWith: boolean;
  /** Several statements can be sent at once and answered in one round trip (postgres-round-trip.ts). */
  readonly roundTrips: boolean;
  /**
   * The database runs in this process: a statement is a call, not a round trip, so a prepared
   * statement run once a row writes many rows fastest (SQLite parses no long VALUES list).
   */
  readonly inProcess: boolean;
}

/** SQLite: one process, one writer. */
export const SQLITE_CAPABILITIES: Capabilities = {
  skipLocked: false,
  sharedByInstances: false,
  rowLocks: false,
  notify: false,
  oneWriter: true,
  migrationLock: false,
  schemas: false,
  dataModifyingWith: false,
  roundTrips: false,
  inProcess: true,
};

/** PostgreSQL: several instances, row locks, LISTEN/NOTIFY. */
export const POSTGRES_CAPABILITIES: Capabilities = {
  skipLocked: true,
  sharedByInstances: true,
  rowLocks: true,
  notify: true,
  oneWriter: false,
  migrationLock: true,
  schemas: true,
  dataModifyingWith: true,
  roundTrips: true,
  inProcess: false,
};
