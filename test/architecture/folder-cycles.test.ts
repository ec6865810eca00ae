/**
 * The boundaries between the folders of src/: no import cycle between them, and each imports
 * only from the layers below its own. A node is a top-level folder of src/ (`db`, `runners`, …)
 * or a file at its root (`errors.ts`, `main.ts`). Imports are read from the source text: every
 * relative `from '…'`, `import('…')` and `import '…'`.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../../src', import.meta.url));

/**
 * Bottom first. A node may import from the layers below its own, never from its own layer or
 * above. A new folder (or root file) must be placed here; moving one up or down is a decision
 * about the architecture, to be made here on purpose.
 */
const LAYERS: readonly (readonly string[])[] = [
  // Shared helpers that know nothing of the service's parts.
  [
    'characters.ts',
    'errors.ts',
    'json.ts',
    'operational-source.ts',
    'package-info.ts',
    'random-bytes.ts',
    'recently-used.ts',
    'supported-node.ts',
    'thread-name.ts',
    'turn-batch.ts',
    'url-password.ts',
    'uuid.ts',
    'net',
    'time',
  ],
  // Self-contained libraries: JSONPath, reading request bodies, the metrics and tracing interfaces, broker protocols.
  ['jsonpath', 'request-body', 'metrics', 'tracing', 'brokers'],
  // The kinds of destination: each one's target URLs, auth and handler (over the broker protocols).
  ['destinations'],
  // Storage, configuration, the CloudEvents format.
  ['db', 'config', 'cloudevents'],
  // Subscriptions as users see them; what the runners share (queue claims, handoffs, settling).
  ['subscriptions', 'runners'],
  // Matching events to subscriptions; the policy stage.
  ['matching', 'policy'],
  // Receiving events; the delivery stage (whose outbound thread also hosts the policy client);
  // reading the original service's database into this one's.
  ['receive', 'delivery', 'pacifica'],
  // Reading and waiting for pull subscriptions' events (over the delivery stage's event bodies).
  ['pull'],
  // The entry points' own parts: the HTTP API, the CLI, the web console's files.
  ['api', 'cli', 'console'],
  // The server's builders: each part of the server wired from the others, and their start and stop.
  ['server'],
  // The composition root, and the container image's readiness probe.
  ['main.ts', 'readiness-probe.ts'],
];

/** The storage layer sits at the bottom: it never reaches up into configuration or the stages. */
const DB_MAY_NOT_IMPORT = [
  'config',
  'api',
  'cli',
  'delivery',
  'policy',
  'receive',
  'matching',
  'runners',
  'subscriptions',
  'metrics',
  'server',
  'main.ts',
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function nodeOf(path: string): string {
  const [first = '', ...rest] = relative(SRC, path).split(sep);
  return rest.length === 0 ? first.replace(/\.js$/, '.ts') : first;
}

const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

/** node -> node -> the imports (file: specifier) that make the edge. */
function folderGraph(): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const file of sourceFiles(SRC)) {
    const from = nodeOf(file);
    const edges = graph.get(from) ?? new Map<string, string[]>();
    graph.set(from, edges);
    for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const specifier = match[1]!;
      const to = nodeOf(resolve(dirname(file), specifier));
      if (to === from) continue;
      edges.set(to, [...(edges.get(to) ?? []), `${relative(SRC, file)}: '${specifier}'`]);
    }
  }
  return graph;
}

/** A cycle as the list of its nodes (the first repeated at the end), or undefined. */
function findCycle(graph: Map<string, Map<string, string[]>>): string[] | undefined {
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'visiting') return [...path.slice(path.indexOf(node)), node];
    state.set(node, 'visiting');
    path.push(node);
    for (const next of [...(graph.get(node)?.keys() ?? [])].sort()) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of [...graph.keys()].sort()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}

function describeGraph(graph: Map<string, Map<string, string[]>>): string[] {
  return [...graph.keys()].sort().map((node) => `${node} -> ${[...graph.get(node)!.keys()].sort().join(', ') || '(nothing)'}`);
}

const graph = folderGraph();

describe('folders of src/', () => {
  it('import one another without a cycle', (t) => {
    for (const line of describeGraph(graph)) t.diagnostic(line);
    const cycle = findCycle(graph);
    if (cycle) {
      const edges = cycle.slice(1).map((to, i) => `  ${cycle[i]} -> ${to}, by ${graph.get(cycle[i]!)!.get(to)!.join('; ')}`);
      assert.fail(`import cycle between folders: ${cycle.join(' -> ')}\n${edges.join('\n')}`);
    }
  });

  it('import only from the layers below their own', () => {
    const layerOf = new Map(LAYERS.flatMap((nodes, layer) => nodes.map((node) => [node, layer] as const)));
    const unplaced = [...graph.keys()].filter((node) => !layerOf.has(node));
    assert.deepEqual(unplaced, [], 'every folder and root file of src/ has a layer in LAYERS');
    const violations: string[] = [];
    for (const [from, edges] of graph) {
      for (const [to, imports] of edges) {
        if (layerOf.get(to)! >= layerOf.get(from)!)
          violations.push(`${from} (layer ${layerOf.get(from)}) -> ${to} (layer ${layerOf.get(to)}), by ${imports.join('; ')}`);
      }
    }
    assert.deepEqual(violations, []);
  });

  it('db/ imports nothing from configuration, the API, the stages or the other upper layers', () => {
    const reached = [...(graph.get('db')?.keys() ?? [])];
    assert.deepEqual(
      reached.filter((node) => DB_MAY_NOT_IMPORT.includes(node)),
      [],
      `db imports ${reached.join(', ')}`,
    );
  });

  it('the reading of imports finds every kind of relative import', () => {
    const text = `import a from './a.js';\nimport type { B } from '../b/c.js';\nexport { d } from './d.js';\nawait import('../e.js');\nimport './f.js';\nimport x from 'kysely';`;
    assert.deepEqual(
      [...text.matchAll(IMPORT)].map((m) => m[1]),
      ['./a.js', '../b/c.js', './d.js', '../e.js', './f.js'],
    );
  });
});
