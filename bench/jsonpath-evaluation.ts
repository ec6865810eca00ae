/**
 * Evaluations per second of single compiled expressions: ours next to json-p3 and
 * jsonpath-plus, in the same process, over the facility's own event.
 */
import { type JSONValue, jsonpath as jsonP3 } from 'json-p3';
import { JSONPath } from 'jsonpath-plus';
import type { JsonValue } from '../src/json.js';
import { compileJsonPath } from '../src/jsonpath/index.js';
import { opsPerSecond } from './measure.js';
import type { Row } from './table.js';

interface Case {
  label: string;
  ours: string;
  /** The same query for the other libraries (RFC 9535 text for json-p3), or none. */
  rfc?: string;
  plus?: string;
}

const CASES: Case[] = [
  { label: 'member', ours: '$.eventType', rfc: '$.eventType', plus: '$.eventType' },
  {
    label: 'filter (rfc9535)',
    ours: "$.data[?@.destinationTable == 'Files'].name",
    rfc: "$.data[?@.destinationTable == 'Files'].name",
    plus: "$.data[?(@.destinationTable == 'Files')].name",
  },
  {
    label: 'filter, 2 terms',
    ours: "$.data[?@.destinationTable == 'TransactionKeyValue' && @.value == 'Blah']",
    rfc: "$.data[?@.destinationTable == 'TransactionKeyValue' && @.value == 'Blah']",
    plus: "$.data[?(@.destinationTable == 'TransactionKeyValue' && @.value == 'Blah')]",
  },
  { label: 'descendant', ours: '$..name', rfc: '$..name', plus: '$..name' },
  { label: 'match()', ours: "$.data[?match(@.name, '.*\\\\.txt')].name", rfc: "$.data[?match(@.name, '.*\\\\.txt')].name" },
  {
    label: 'filter (jsonpath2)',
    ours: '$.data[*][?(@.destinationTable = "Files")].name',
    rfc: "$.data[?@.destinationTable == 'Files'].name",
    plus: "$.data[?(@.destinationTable == 'Files')].name",
  },
  { label: 'no match (jsonpath2)', ours: '$.data.*[?(@.value = "nothing")].value' },
];

export function benchEvaluation(event: JsonValue): Row[] {
  return CASES.map((c) => {
    const ours = compileJsonPath(c.ours);
    const p3 = c.rfc ? jsonP3.compile(c.rfc) : undefined;
    return {
      expression: `${c.label}: ${c.ours}`,
      dialect: ours.dialect,
      'ours matches/s': opsPerSecond(() => ours.matches(event)),
      'ours select/s': opsPerSecond(() => ours.select(event)),
      'json-p3 query/s': p3 ? opsPerSecond(() => p3.query(event as JSONValue)) : NaN,
      'jsonpath-plus/s': c.plus ? opsPerSecond(() => JSONPath({ path: c.plus!, json: event as object })) : NaN,
    };
  });
}
