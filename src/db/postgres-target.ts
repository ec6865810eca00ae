/**
 * A `postgres://` URL as pg takes it. Its `?schema=name` is our own parameter (pg does not know
 * it), so that one database can hold several deployments, or one test each: it is taken out of
 * the URL and becomes the connection's search_path. Every connection the service opens (the
 * pool's, the listener's) gets its settings here, so the name is always checked before it is
 * written into a setting.
 */
export interface PostgresTarget {
  readonly connectionString: string;
  /** The schema the URL names; undefined: the server's default (`public`). */
  readonly schema: string | undefined;
  /** pg's `options`: the `-c name=value` settings of each connection, search_path first; undefined when none. */
  readonly options: string | undefined;
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** `settings` (`name=value`) are set on each connection after the search_path. */
export function postgresTarget(url: string, settings: readonly string[] = []): PostgresTarget {
  const parsed = new URL(url);
  const schema = parsed.searchParams.get('schema') ?? undefined;
  parsed.searchParams.delete('schema');
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new Error(`invalid schema name in the database URL: ${schema}`);
  }
  const all = [...(schema ? [`search_path=${schema}`] : []), ...settings];
  return {
    connectionString: parsed.toString(),
    schema,
    options: all.length > 0 ? all.map((setting) => `-c ${setting}`).join(' ') : undefined,
  };
}
