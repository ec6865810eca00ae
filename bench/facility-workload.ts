/**
 * Subscriptions and events shaped like the facility's. Users subscribe to their own data: a
 * project, a submitter, an instrument, a tag, a site, or files of a kind within their project
 * ("whenever a text/plain file lands in project 1234"). 5% are facility-wide: huge files,
 * a file type anywhere, files without a checksum, names matching a pattern; the last two can
 * only be filed under keys every event has, so they are evaluated for every event.
 */
import type { JsonValue } from '../src/json.js';
import type { Random } from '../test/support/random.js';

const PROJECTS = 20_000;
const SUBMITTERS = 5_000;
const INSTRUMENTS = 500;
const TAGS = 10_000;
const SITES = 2_000;
const MIMETYPES = ['text/plain', 'application/pdf', 'image/tiff', 'application/x-hdf5', 'text/csv', 'image/png'];
const EXTENSIONS = ['txt', 'csv', 'h5', 'tif', 'pdf', 'xls', 'png', 'raw', 'nc', 'json'];

const pick = <T>(r: Random, items: readonly T[]): T => items[r.int(items.length)]!;
const project = (r: Random) => `$.data[?@.destinationTable == 'Transactions.project' && @.value == '${r.int(PROJECTS)}']`;

/** Expression texts as users would write them, in both dialects, in the proportions above. */
export function subscriptionExpression(r: Random): string {
  const shape = r.next();
  if (shape < 0.3) return project(r);
  if (shape < 0.45) return `$.data[*][?(@.destinationTable = "TransactionKeyValue" and @.key = "Tag" and @.value = "tag-${r.int(TAGS)}")]`;
  if (shape < 0.57) return `$.data[?@.destinationTable == 'Transactions.submitter' && @.value == ${r.int(SUBMITTERS)}]`;
  if (shape < 0.65) return `$.data[*][?(@.destinationTable = "Transactions.instrument" and @.value = ${r.int(INSTRUMENTS)})]`;
  if (shape < 0.75) return `$[?$.source == '/facility/site-${r.int(SITES)}']`;
  if (shape < 0.87) return `$[?${project(r)} && $.data[?@.mimetype == '${pick(r, MIMETYPES)}']]`;
  if (shape < 0.92) {
    const instrument = `$.data[*][?(@.destinationTable = "Transactions.instrument" and @.value = ${r.int(INSTRUMENTS)})]`;
    return `$[?(${instrument} and $.data[*][?(@.size > ${(1 + r.int(20)) * 10_000_000})])]`;
  }
  if (shape < 0.95) return `$[?${project(r)} && $.data[?match(@.name, '.*\\\\.${pick(r, EXTENSIONS)}')]]`;
  // Facility-wide.
  const wide = r.int(4);
  if (wide === 0) return `$.data[?@.size > ${(1 + r.int(100)) * 1_000_000_000}]`;
  if (wide === 1) return `$.data[?@.mimetype == '${pick(r, MIMETYPES)}']`;
  if (wide === 2) return `$.data[?@.destinationTable == 'Files' && !@.hashsum]`;
  return `$.data[?match(@.name, '.*\\\\.${pick(r, EXTENSIONS)}')]`;
}

/** An ingest event: one transaction with its attributes, a tag or two, and a few files. */
export function ingestEvent(r: Random, sequence: number): JsonValue {
  const files: JsonValue[] = [];
  const fileCount = 3 + r.int(8);
  for (let i = 0; i < fileCount; i++) {
    files.push({
      _id: sequence * 100 + i,
      destinationTable: 'Files',
      name: `file-${i}.${pick(r, EXTENSIONS)}`,
      mimetype: pick(r, MIMETYPES),
      size: r.int(200_000_000),
      subdir: `data/run-${r.int(50)}/`,
      hashtype: 'sha1',
      ...(r.chance(0.99) ? { hashsum: 'f1d2d2f924e986ac86fdf7b36c94bcdf32beec15' } : {}),
      ctime: '2026-11-22T01:00:00',
      mtime: '2026-11-22T01:00:00',
    });
  }
  return {
    specversion: '1.0',
    id: `event-${sequence}`,
    source: `/facility/site-${r.int(SITES)}`,
    type: 'org.pacifica.metadata.ingest',
    datacontenttype: 'application/json',
    data: [
      { destinationTable: 'Transactions._id', value: sequence },
      { destinationTable: 'Transactions.submitter', value: r.int(SUBMITTERS) },
      { destinationTable: 'Transactions.project', value: String(r.int(PROJECTS)) },
      { destinationTable: 'Transactions.instrument', value: r.int(INSTRUMENTS) },
      { destinationTable: 'TransactionKeyValue', key: 'Tag', value: `tag-${r.int(TAGS)}` },
      ...files,
    ],
  };
}
