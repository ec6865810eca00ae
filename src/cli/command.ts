import type { Config } from '../config/settings.js';
import type { DatabaseHandle } from '../db/connect.js';

/** What a subcommand gets: its own arguments, the configuration, the database, and where to write. */
export interface CommandContext {
  readonly args: string[];
  readonly config: Config;
  readonly database: DatabaseHandle;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

export interface Command {
  readonly name: string;
  readonly usage: string;
  readonly summary: string;
  /** dbsync only: a SQLite file that does not exist is created; the others report it missing. */
  readonly createsDatabase?: boolean;
  /** Exit status when the SQLite file does not exist (default: failure). */
  readonly exitWhenMissing?: number;
  /** What to say when the SQLite file does not exist (default: the schema is out of date, run dbsync). */
  readonly missingMessage?: (path: string) => string;
  /** Checks the arguments before the database is opened; returns a message when they are wrong. */
  check(args: string[]): string | undefined;
  run(context: CommandContext): Promise<number>;
}

/** Exit codes, as the original tool used them; 130 (128 + SIGINT) as shells report an interrupted command. */
export const EXIT = { ok: 0, failure: 1, usage: 2, interrupted: 130, outOfDate: 255 } as const;
