/**
 * The goals (issue 15's, the import's, and pull fan-out's of PRODUCT.md), each with the figure this run measured for it. Ratios are to the ceiling,
 * or PostgreSQL's to SQLite's, measured in the same run, so they compare across runs and
 * machines. A goal whose section did not run (or, for PostgreSQL, without
 * NOTIFICATIONS_BENCH_DATABASE_URL) is "not measured".
 *
 * A throughput goal also shows what the server's main thread alone would allow, from the CPU
 * it spent per event (cpu-time.ts): the bound on a machine where it has a core of its own and
 * the load generator, the stubs and PostgreSQL have theirs, since one event loop does not get
 * faster with more cores.
 */
import { BURST_EVENTS, BURST_RECONNECTS, FANOUT_SUBSCRIPTIONS, IDLE_READERS, WAKE_READERS } from './fanout.js';
import { OPERATIONS_METRIC } from './pull-metrics.js';
import { BURST_TARGET_DELAY_MS, EXCHANGES_PER_EVENT } from './receive.js';
import type { Row } from './table.js';

type Results = Readonly<Record<string, Row[]>>;

interface Measured {
  measured: string;
  met: boolean;
}

const NOT_MEASURED = 'not measured';
/** Every instance holds every subscription: the matching and memory goals are at this many. */
const GOAL_SUBSCRIPTIONS = 1_000_000;
const BOUND = 'one main thread allows';

export function goals(results: Results, postgres: boolean): Row[] {
  const rows: Row[] = [];
  const goal = (name: string, target: string, measure: () => Measured | string, bound: () => string = () => '') => {
    const m = measure();
    rows.push(
      typeof m === 'string'
        ? { goal: name, target, measured: m, met: NOT_MEASURED, [BOUND]: '' }
        : { goal: name, target, measured: m.measured, met: m.met ? 'yes' : 'no', [BOUND]: bound() },
    );
  };
  const ceiling = num(results.ceiling?.[0]?.['requests/s']);
  const find = (section: string, database: string) => results[section]?.find((row) => row.database === database);
  /** Events/s the main thread's CPU per event allows, and that CPU; undefined when not measured. */
  const mainThread = (load: string, database: string) => {
    const row = results.cpu?.find((r) => r.load === load && r.database === database);
    return row && { eventsPerSecond: num(row['events/s one thread allows']), ms: num(row['main thread ms/event']) };
  };
  /** The CPU a SQLite event of `load` cost, as a multiple of what a request of the ceiling cost, in column `column`. */
  const cpuMultiple = (load: string, column: string, most: number): Measured | string => {
    const ceilingRow = results.cpu?.find((r) => r.load === 'ceiling');
    const row = results.cpu?.find((r) => r.load === load && r.database === 'sqlite');
    if (!ceilingRow) return missing('ceiling');
    if (!row) return missing(load);
    const [ms, ceilingMs] = [num(row[column]), num(ceilingRow[column])];
    const multiple = ms / ceilingMs;
    return { measured: `${fixed(multiple, 1)}× (${ms.toPrecision(3)} / ${ceilingMs.toPrecision(3)} ms)`, met: multiple <= most };
  };
  const missing = (section: string, database = 'sqlite') => {
    if (!results[section]) return `${NOT_MEASURED} (section ${section} not run)`;
    if (database === 'postgres' && !postgres) return `${NOT_MEASURED} (no NOTIFICATIONS_BENCH_DATABASE_URL)`;
    return `${NOT_MEASURED} (no ${database} row)`;
  };

  goal(
    `burst intake (targets answer after ${BURST_TARGET_DELAY_MS / 1000} s), SQLite: /receive of the ceiling`,
    '≥ 0.33',
    () => {
      const row = find('burst', 'sqlite');
      if (!row) return missing('burst');
      const eps = num(row['events/s']);
      return { measured: `${fixed(eps / ceiling)} (${whole(eps)} events/s, ceiling ${whole(ceiling)} req/s)`, met: eps / ceiling >= 1 / 3 };
    },
    () => {
      const main = mainThread('burst', 'sqlite');
      return main ? `${fixed(main.eventsPerSecond / ceiling)} (${fixed(main.ms)} ms/event)` : '';
    },
  );
  goal(`burst intake, SQLite: the server's main thread per event, in the ceiling's per request`, '≤ 4×', () =>
    cpuMultiple('burst', 'main thread ms/event', 4),
  );
  goal('burst intake, SQLite: every answered event delivered', 'all', () => {
    const row = find('burst', 'sqlite');
    if (!row) return missing('burst');
    return { measured: `${row['all delivered']}, drained in ${fixed(num(row['drained in s']), 1)} s`, met: row['all delivered'] === 'yes' };
  });
  goal(
    `pipeline, SQLite (3 owners/event): /receive of the ceiling in exchanges (×${EXCHANGES_PER_EVENT})`,
    '≥ 0.60',
    () => {
      const row = find('receive', 'sqlite');
      if (!row) return missing('receive');
      const eps = num(row['events/s']);
      const fraction = (eps * EXCHANGES_PER_EVENT) / ceiling;
      return {
        measured: `${fixed(fraction)} (${whole(eps)} events/s × ${EXCHANGES_PER_EVENT}, ceiling ${whole(ceiling)} req/s)`,
        met: fraction >= 0.6,
      };
    },
    () => {
      const main = mainThread('receive', 'sqlite');
      return main ? `${fixed((main.eventsPerSecond * EXCHANGES_PER_EVENT) / ceiling)} (${fixed(main.ms)} ms/event)` : '';
    },
  );
  goal(`pipeline, SQLite: the server process per event, in the ceiling's process per request`, '≤ 20×', () =>
    cpuMultiple('receive', 'process ms/event', 20),
  );
  goal('pipeline, SQLite: every answered event delivered', 'all', () => {
    const row = find('receive', 'sqlite');
    if (!row) return missing('receive');
    return { measured: String(row['all delivered']), met: row['all delivered'] === 'yes' };
  });
  for (const [section, column, what] of [
    ['receive', 'events/s', '/receive events/s'],
    ['receive', 'deliveries/s end to end', 'deliveries/s end to end'],
    ['creates', 'creates/s', 'creates/s'],
  ] as const) {
    goal(
      `PostgreSQL / SQLite: ${what}`,
      '≥ 0.80',
      () => {
        const sqlite = find(section, 'sqlite');
        const pg = find(section, 'postgres');
        if (!sqlite) return missing(section);
        if (!pg) return missing(section, 'postgres');
        const ratio = num(pg[column]) / num(sqlite[column]);
        return { measured: `${fixed(ratio)} (${whole(num(pg[column]))} / ${whole(num(sqlite[column]))})`, met: ratio >= 0.8 };
      },
      () => {
        const [pg, sqlite] = [mainThread(section, 'postgres'), mainThread(section, 'sqlite')];
        return pg && sqlite ? `${fixed(pg.eventsPerSecond / sqlite.eventsPerSecond)} (${fixed(pg.ms)} / ${fixed(sqlite.ms)} ms/event)` : '';
      },
    );
  }
  for (const [database, name] of [
    ['sqlite', 'SQLite'],
    ['postgres', 'PostgreSQL'],
  ] as const) {
    goal(`receive → delivered p99 at 1,000 events/s, ${name}`, '≤ 50 ms', () => {
      const row = find('latency', database);
      if (!row) return missing('latency', database);
      const p99 = num(row['to delivered p99 ms']);
      return { measured: `${p99 >= 100 ? whole(p99) : fixed(p99, 1)} ms`, met: p99 <= 50 };
    });
  }
  const matching = results.matching?.find((row) => row.subscriptions === GOAL_SUBSCRIPTIONS);
  goal('matching 1,000,000 subscriptions: mean per event', '≤ 150 µs', () => {
    if (!matching) return missing('matching');
    const mean = num(matching['index µs mean']);
    return { measured: `${whole(mean)} µs`, met: mean <= 150 };
  });
  goal('matching 1,000,000 subscriptions: p99 per event', '≤ 1 ms', () => {
    if (!matching) return missing('matching');
    const p99 = num(matching['index µs p99']);
    return { measured: `${fixed(p99 / 1000)} ms`, met: p99 <= 1000 };
  });
  goal('server resident with 1,000,000 subscriptions loaded', '≤ 1.5 GB', () => {
    const memory = results.memory?.filter((row) => row.subscriptions === GOAL_SUBSCRIPTIONS);
    if (!memory || memory.length === 0) return missing('memory');
    const worst = Math.max(...memory.map((row) => num(row['resident MB'])));
    return { measured: memory.map((row) => `${whole(num(row['resident MB']))} MB (${row.database})`).join(', '), met: worst <= 1.5 * 1024 };
  });
  const importInto = (database: string) => results.import?.find((row) => row.into === database);
  goal('import-pacifica, PostgreSQL into SQLite: log rows a second', '≥ 25,000', () => {
    const row = importInto('sqlite');
    if (!row) return results.import ? `${NOT_MEASURED} (no NOTIFICATIONS_BENCH_DATABASE_URL)` : missing('import');
    return { measured: whole(num(row['log rows/s'])), met: num(row['log rows/s']) >= 25_000 };
  });
  goal('import-pacifica: peak resident memory', '≤ 300 MB', () => {
    const rows = (results.import ?? []).filter((row) => typeof row['peak resident MB'] === 'number');
    if (rows.length === 0) return results.import ? `${NOT_MEASURED} (no NOTIFICATIONS_BENCH_DATABASE_URL)` : missing('import');
    return {
      measured: rows.map((row) => `${whole(num(row['peak resident MB']))} MB (into ${row.into})`).join(', '),
      met: rows.every((row) => num(row['peak resident MB']) <= 300),
    };
  });
  /** A phase's row, or why there is none (the section not run, no PostgreSQL, or a row that only says why it did not run). */
  const fanout = (phase: string, database: string): Row | string => {
    const row = results.fanout?.find((r) => r.phase === phase && r.database === database);
    if (!row) return missing('fanout', database);
    return row.met === undefined ? String(row.readers) : row;
  };
  for (const [database, name] of [
    ['sqlite', 'SQLite'],
    ['postgres', 'PostgreSQL'],
  ] as const) {
    goal(`pull fan-out, ${name}: reader database operations/s, ${whole(IDLE_READERS)} idle streams and long polls held`, '0', () => {
      const row = fanout('idle', database);
      if (typeof row === 'string') return row;
      const perSecond = num(row['reader ops/s']);
      const chunks =
        typeof row['PG chunks/s with readers'] === 'number'
          ? ` (PostgreSQL chunks/s ${fixed(num(row['PG chunks/s with readers']), 1)} with readers, ${fixed(num(row['PG chunks/s without']), 1)} without)`
          : '';
      if (Number.isNaN(perSecond)) return `${NOT_MEASURED}: the server has no ${OPERATIONS_METRIC}${chunks}`;
      return {
        measured: `${perSecond === 0 ? 0 : fixed(perSecond, 1)} (${whole(num(row.readers))} readers)${chunks}`,
        met: perSecond === 0,
      };
    });
    goal(`pull fan-out, ${name}: an event to ${whole(WAKE_READERS)} waiting readers, p99`, '< 1 s, every reader', () => {
      const row = fanout('wake', database);
      if (typeof row === 'string') return row;
      const p99 = num(row['p99 ms']);
      return { measured: `${whole(p99)} ms (p50 ${whole(num(row['p50 ms']))} ms; reached ${row.reached})`, met: row.met === 'yes' };
    });
    goal(
      `pull fan-out, ${name}: database reads per wake of ${whole(WAKE_READERS)} readers of ${FANOUT_SUBSCRIPTIONS} subscriptions`,
      `≤ ${FANOUT_SUBSCRIPTIONS}`,
      () => {
        const row = fanout('wake', database);
        if (typeof row === 'string') return row;
        const reads = num(row['reads/wake']);
        if (Number.isNaN(reads)) return `${NOT_MEASURED}: the server has no ${OPERATIONS_METRIC}`;
        return {
          measured: `${fixed(reads, 1)} (all reader operations: ${row['ops/wake by operation']})`,
          met: reads <= FANOUT_SUBSCRIPTIONS,
        };
      },
    );
    goal(
      `pull fan-out, ${name}: a burst of ${BURST_EVENTS} events, ${whole(WAKE_READERS)} readers, ${BURST_RECONNECTS} reconnecting`,
      '0 streams ended, 0 503',
      () => {
        const row = fanout('burst', database);
        if (typeof row === 'string') return row;
        return {
          measured:
            `streams ended (readers) ${row['streams ended by server (readers)']}, reader answers 503 (readers) ${row['reader 503s (readers)']}, ` +
            `events refused (answers not 200) ${row['events refused (answers not 200)']}; every reader got all: ${row['every reader got all']}`,
          met: row.met === 'yes',
        };
      },
    );
  }
  /** A counts row (counts.ts): a phase, a database, and for the load the run (pipeline, burst); or why there is none. */
  const counted = (phase: string, database: string, run?: string): Row | string => {
    const row = results.counts?.find((r) => r.phase === phase && r.database === database && (run === undefined || r.run === run));
    return row ?? missing('counts', database);
  };
  const countGoal = (name: string, most: number, phase: string, database: string, column: string, run?: string, unit = '') =>
    goal(name, `≤ ${most.toLocaleString('en-US')}${unit}`, () => {
      const row = counted(phase, database, run);
      if (typeof row === 'string') return row;
      const value = row[column];
      if (typeof value !== 'number') return `${NOT_MEASURED}: ${value}`;
      return { measured: `${value >= 100 ? whole(value) : fixed(value)}${unit}`, met: value <= most };
    });
  countGoal('counts, burst, PostgreSQL: `matches` row updates per event', 9, 'load', 'postgres', 'matches updates', 'burst');
  countGoal('counts, burst, PostgreSQL: WAL bytes per event', 9_000, 'load', 'postgres', 'WAL bytes', 'burst');
  countGoal('counts, pipeline, PostgreSQL: round trips per event', 2.2, 'load', 'postgres', 'round trips', 'pipeline');
  countGoal('counts, pipeline, PostgreSQL: commits per event', 1.6, 'load', 'postgres', 'commits', 'pipeline');
  countGoal('counts, pipeline, PostgreSQL: WAL bytes per event', 8_000, 'load', 'postgres', 'WAL bytes', 'pipeline');
  countGoal('counts, pipeline, SQLite: WAL bytes per event', 24_000, 'load', 'sqlite', 'WAL bytes', 'pipeline');
  countGoal('counts, pipeline, SQLite: fsyncs per event', 0.7, 'load', 'sqlite', 'fsyncs', 'pipeline');
  countGoal('counts, idle, PostgreSQL: commits', 0.1, 'idle', 'postgres', 'commits', undefined, '/s');
  countGoal('counts, idle, PostgreSQL: round trips', 1, 'idle', 'postgres', 'round trips', undefined, '/s');
  goal('counts, idle, SQLite: fsyncs', '0/s', () => {
    const row = counted('idle', 'sqlite');
    if (typeof row === 'string') return row;
    const value = row.fsyncs;
    if (typeof value !== 'number') return `${NOT_MEASURED}: ${value}`;
    return { measured: `${fixed(value)}/s`, met: value === 0 };
  });
  countGoal('counts, creates, PostgreSQL: round trips per POST /eventmatch', 1.1, 'creates', 'postgres', 'round trips');
  goal(`start-up with ${whole(GOAL_SUBSCRIPTIONS)} subscriptions, to /readyz`, '≤ 10 s', () => {
    const rows = (results.counts ?? []).filter((row) => row.phase === 'start-up');
    if (rows.length === 0) return missing('counts');
    return {
      measured: rows.map((row) => `${fixed(num(row['to /readyz s']), 1)} s (${row.database})`).join(', '),
      met: rows.every((row) => num(row['to /readyz s']) <= 10),
    };
  });
  const deliveryRuns = [
    ...['receive', 'burst', 'latency', 'sustained'].flatMap((section) =>
      (results[section] ?? []).map((row) => ({ run: `${section} ${row.database}`, row })),
    ),
    ...(results.counts ?? []).filter((row) => row.phase === 'load').map((row) => ({ run: `counts ${row.run} ${row.database}`, row })),
  ];
  goal('nothing lost: every answered event delivered', 'in every run', () => {
    if (deliveryRuns.length === 0) return `${NOT_MEASURED} (no delivery section run)`;
    const lost = deliveryRuns.filter(({ row }) => row['all delivered'] !== 'yes');
    return {
      measured:
        lost.length === 0 ? `yes, ${deliveryRuns.length} runs` : lost.map(({ run, row }) => `${run}: ${row['all delivered']}`).join('; '),
      met: lost.length === 0,
    };
  });
  const requestRuns = [...deliveryRuns, ...(results.creates ?? []).map((row) => ({ run: `creates ${row.database}`, row }))].filter(
    ({ row }) => row['non-2xx'] !== undefined,
  );
  goal('no 5xx (no answer but 2xx, no failed request)', '0', () => {
    if (requestRuns.length === 0) return `${NOT_MEASURED} (no load section run)`;
    const failed = requestRuns.filter(({ row }) => num(row['non-2xx']) !== 0);
    return {
      measured:
        failed.length === 0 ? `0 in ${requestRuns.length} runs` : failed.map(({ run, row }) => `${run}: ${row['non-2xx']}`).join('; '),
      met: failed.length === 0,
    };
  });
  return rows;
}

function num(value: string | number | undefined): number {
  return typeof value === 'number' ? value : NaN;
}

function fixed(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

function whole(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a';
}
