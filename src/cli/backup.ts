/**
 * `backup FILE`: a copy of the SQLite database as it stood at one moment, taken while the
 * server runs (SQLite's online backup). The copy is written beside FILE under another name and
 * moved into place once whole, so that a failure part-way leaves FILE as it was.
 */
import { existsSync, linkSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type Command, EXIT } from './command.js';

interface Arguments {
  readonly file: string;
  readonly force: boolean;
}

function parse(args: readonly string[]): Arguments | string {
  let file: string | undefined;
  let force = false;
  for (const arg of args) {
    if (arg === '--force') force = true;
    else if (arg.startsWith('-')) return `backup: unknown option ${arg}`;
    else if (file !== undefined) return `backup: one file only (given ${file} and ${arg})`;
    else file = arg;
  }
  return file === undefined ? 'backup: no file given' : { file, force };
}

export const backup: Command = {
  name: 'backup',
  usage: 'backup FILE [--force]',
  summary:
    'copy the SQLite database into FILE, consistent as of one moment, while the server goes on running (SQLite online backup); ' +
    'prints the size of the copy; exit 0. An existing FILE is kept (exit 2) unless --force. ' +
    'PostgreSQL: exit 2, back it up with pg_dump',
  missingMessage: (path) => `the database file ${path} does not exist: there is nothing to back up`,
  check: (args) => {
    const parsed = parse(args);
    return typeof parsed === 'string' ? parsed : undefined;
  },
  async run({ args, database, out, err }) {
    const parsed = parse(args);
    if (typeof parsed === 'string') throw new Error(parsed);
    const { file, force } = parsed;
    if (database.backup === undefined) {
      err(`backup: ${database.description} is a PostgreSQL database: back it up with pg_dump (pg_dump --format=custom --file=FILE URL)`);
      return EXIT.usage;
    }
    if (!force && existsSync(file)) {
      err(`backup: ${file} already exists: it is left as it is (--force replaces it)`);
      return EXIT.usage;
    }
    const partial = join(dirname(file), `.${basename(file)}.partial-${process.pid}`);
    try {
      await database.backup(partial);
      if (!moveIntoPlace(partial, file, force)) {
        err(`backup: ${file} appeared while the copy was made: it is left as it is (--force replaces it)`);
        return EXIT.usage;
      }
    } catch (error) {
      err(`backup: cannot write ${file}: ${error instanceof Error ? error.message : String(error)}`);
      return EXIT.failure;
    } finally {
      rmSync(partial, { force: true });
    }
    out(`backup: copied ${database.description} to ${file} (${statSync(file).size} bytes)`);
    return EXIT.ok;
  },
};

/** false: without `force`, `file` exists. A hard link refuses an existing name atomically; a rename would replace it. */
function moveIntoPlace(partial: string, file: string, force: boolean): boolean {
  if (force) {
    renameSync(partial, file);
    return true;
  }
  try {
    linkSync(partial, file);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    // A file system without hard links: checked, then renamed.
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
    if (existsSync(file)) return false;
    renameSync(partial, file);
    return true;
  }
}
