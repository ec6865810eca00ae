import { schemaStatus } from '../db/migrate.js';
import { type Command, EXIT } from './command.js';

export const dbchk: Command = {
  name: 'dbchk',
  usage: 'dbchk [--equal]',
  summary:
    'exit 0 when the schema is current, 255 when it must be updated (a missing SQLite file included; --equal: also when it is newer)',
  exitWhenMissing: EXIT.outOfDate,
  check: (args) => (args.every((a) => a === '--equal') ? undefined : `dbchk: unknown argument ${args.find((a) => a !== '--equal')}`),
  async run({ args, database, out, err }) {
    const status = await schemaStatus(database);
    if (status.pending.length > 0) {
      err(`dbchk: the schema of ${database.description} is out of date (lacks ${status.pending.join(', ')}): run dbsync`);
      return EXIT.outOfDate;
    }
    if (status.unknown.length > 0) {
      const line = `the schema of ${database.description} is newer than this program (has ${status.unknown.join(', ')})`;
      if (args.includes('--equal')) {
        err(`dbchk: ${line}`);
        return EXIT.outOfDate;
      }
      out(`dbchk: ${line}; compatible`);
      return EXIT.ok;
    }
    out(`dbchk: the schema of ${database.description} is current`);
    return EXIT.ok;
  },
};
