#!/usr/bin/env node
/**
 * `svc-notifications-cmd`: the admin CLI. Global options come before the subcommand; the
 * database is the one the service would use (flags, NOTIFICATIONS_* variables, --config file).
 */
import '../supported-node.js';
import { readFileSync } from 'node:fs';
import { ConfigError, loadConfig } from '../config/load.js';
import { type Config, SETTINGS } from '../config/settings.js';
import { type DatabaseHandle, DatabaseMissing, openDatabase } from '../db/connect.js';
import { packageInfo } from '../package-info.js';
import { maskUrlPassword } from '../url-password.js';
import { type Command, EXIT } from './command.js';
import { backup } from './backup.js';
import { dbchk } from './dbchk.js';
import { dbsync } from './dbsync.js';
import { eventget } from './eventget.js';
import { eventpurge } from './eventpurge.js';
import { eventretry } from './eventretry.js';
import { importPacifica } from './import-pacifica.js';
import { reseal } from './reseal.js';

const PROGRAM = 'svc-notifications-cmd';
const COMMANDS: readonly Command[] = [dbchk, dbsync, eventget, eventpurge, eventretry, backup, reseal, importPacifica];
const GLOBAL_WITH_VALUE = new Set(['--config', '--database-url']);
const IN_MEMORY = 'sqlite::memory:';

function usageLine(): string {
  return `usage: ${PROGRAM} [--database-url URL] [--config FILE] {${COMMANDS.map((c) => c.name).join('|')}} [options]`;
}

function help(): string {
  return [
    usageLine(),
    '',
    ...COMMANDS.map((c) => `  ${c.usage.padEnd(24)} ${c.summary}`),
    '',
    'The database comes from --database-url, NOTIFICATIONS_DATABASE_URL or the --config file',
    `(default ${SETTINGS.databaseUrl.default}); reseal's keys from NOTIFICATIONS_SECRET_KEY or the file. Exit status: 0 success, 1 failure (database`,
    'unreachable), 2 bad arguments, 255 schema out of date (dbchk).',
  ].join('\n');
}

const HELP = new Set(['--help', '-h']);

function commandHelp(command: Command): string {
  return [
    `usage: ${PROGRAM} [--database-url URL] [--config FILE] ${command.usage}`,
    '',
    ...wrap(command.summary, 92).map((line) => `  ${line}`),
  ].join('\n');
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  return line === '' ? lines : [...lines, line];
}

/** Splits `[global options] command [command args]`. */
function split(argv: string[]): { global: string[]; command: string | undefined; args: string[] } {
  const global: string[] = [];
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i]!;
    if (GLOBAL_WITH_VALUE.has(arg)) global.push(arg, argv[++i] ?? '');
    else if ([...GLOBAL_WITH_VALUE].some((flag) => arg.startsWith(`${flag}=`))) global.push(arg);
    else break;
  }
  return { global, command: argv[i], args: argv.slice(i + 1) };
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === '--version') {
    console.log(packageInfo().version);
    return EXIT.ok;
  }
  const { global, command: name, args } = split(argv);
  // `--help`, `help` and `help <command>`; `<command> --help` below.
  const helpOf = name === 'help' ? args[0] : undefined;
  if (name !== undefined && (HELP.has(name) || (name === 'help' && helpOf === undefined))) {
    console.log(help());
    return EXIT.ok;
  }
  const command = COMMANDS.find((c) => c.name === (helpOf ?? name));
  if (!command) {
    console.error(name ? `${PROGRAM}: unknown command ${helpOf ?? name}` : `${PROGRAM}: no command given`);
    console.error(usageLine());
    return EXIT.usage;
  }
  // Before the arguments are checked: `eventget --limit x --help` asks how to write it.
  if (helpOf !== undefined || args.some((arg) => HELP.has(arg))) {
    console.log(commandHelp(command));
    return EXIT.ok;
  }
  const problem = command.check(args);
  if (problem) {
    console.error(`${PROGRAM} ${problem}`);
    console.error(`usage: ${PROGRAM} ${command.usage}`);
    return EXIT.usage;
  }
  let config: Config;
  try {
    config = loadConfig({ argv: global, env: process.env, readFile: (path) => readFileSync(path, 'utf8') });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(`${PROGRAM}: ${error.message}`);
    return EXIT.usage;
  }
  const { databaseUrl, databaseTimeoutMs } = config;
  if (databaseUrl === IN_MEMORY) {
    console.error(
      `${PROGRAM}: ${IN_MEMORY} lives inside the one process that opens it: the CLI cannot reach a server's in-memory database`,
    );
    return EXIT.usage;
  }
  let database: DatabaseHandle | undefined;
  try {
    database = openDatabase(databaseUrl, { create: command.createsDatabase === true, timeoutMs: databaseTimeoutMs });
    return await command.run({ args, config, database, out: (line) => console.log(line), err: (line) => console.error(line) });
  } catch (error) {
    if (error instanceof DatabaseMissing) {
      console.error(
        `${PROGRAM} ${command.name}: ${
          command.missingMessage?.(error.path) ?? `the schema is out of date (${error.message}): run \`${PROGRAM} dbsync\` to create it`
        }`,
      );
      return command.exitWhenMissing ?? EXIT.failure;
    }
    console.error(
      `${PROGRAM} ${command.name}: cannot use the database ${database?.description ?? maskUrlPassword(databaseUrl)}: ${oneLine(error)}`,
    );
    return EXIT.failure;
  } finally {
    await database?.close().catch(() => undefined);
  }
}

function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] ?? text;
}

// exitCode, not exit(): the process ends once stdout has taken everything printed.
main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    console.error(`${PROGRAM}: ${oneLine(error)}`);
    process.exitCode = EXIT.failure;
  },
);
