import { syncSchema } from '../db/migrate.js';
import { type Command, EXIT } from './command.js';

export const dbsync: Command = {
  name: 'dbsync',
  usage: 'dbsync',
  summary: 'create or migrate the schema, creating the SQLite file if need be (idempotent; safe to run from several places at once)',
  createsDatabase: true,
  check: (args) => (args.length === 0 ? undefined : `dbsync: unknown argument ${args[0]}`),
  async run({ database, out }) {
    const ran = await syncSchema(database);
    out(
      ran.length > 0
        ? `dbsync: migrated ${database.description}: ${ran.join(', ')}`
        : `dbsync: the schema of ${database.description} is already current`,
    );
    return EXIT.ok;
  },
};
