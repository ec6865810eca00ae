import assert from 'node:assert/strict';
import { it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { compileJsonPath, JsonPathSyntaxError } from '../../src/jsonpath/index.js';
import { describeOn } from '../support/database.js';
import { JSONPATH_CTS_SKIP, jsonpathCts } from '../support/fixtures.js';

describeOn({ skip: JSONPATH_CTS_SKIP }, 'RFC 9535 compliance test suite, in rfc9535 mode', () => {
  const cases = jsonpathCts();
  it('has the whole suite to run', () => assert.ok(cases.length >= 700, `only ${cases.length} cases`));

  for (const t of cases) {
    it(t.name, () => {
      if (t.invalid_selector) {
        assert.throws(() => compileJsonPath(t.selector, 'rfc9535'), JsonPathSyntaxError);
        return;
      }
      const query = compileJsonPath(t.selector, 'rfc9535');
      const { values, paths } = query.select(t.document!);
      const allowed = t.results ?? [t.result!];
      const which = allowed.findIndex((r) => isDeepStrictEqual(values, r));
      assert.ok(which >= 0, `selected ${JSON.stringify(values)}, expected one of ${JSON.stringify(allowed)}`);
      const expectedPaths = t.results_paths?.[which] ?? t.result_paths;
      if (expectedPaths) assert.deepEqual(paths, expectedPaths);
      assert.equal(query.matches(t.document!), values.length > 0);
    });
  }
});

describeOn({ skip: JSONPATH_CTS_SKIP }, 'RFC 9535 matches, against select', () => {
  const cases = jsonpathCts();
  // `matches` walks values on its own (first-node.ts): every valid selector of the suite, over
  // every document of the suite, must match exactly where `select` finds something.
  const documents = [
    ...new Map(cases.filter((t) => t.document !== undefined).map((t) => [JSON.stringify(t.document), t.document!])).values(),
  ];
  const selectors = [...new Set(cases.filter((t) => !t.invalid_selector).map((t) => t.selector))];

  it('agrees on every document of the suite for every selector', () => {
    const disagreements: string[] = [];
    for (const selector of selectors) {
      const query = compileJsonPath(selector, 'rfc9535');
      for (const document of documents) {
        const selected = query.select(document).values.length > 0;
        if (query.matches(document) !== selected) disagreements.push(`${selector} on ${JSON.stringify(document)}: select ${selected}`);
      }
    }
    assert.ok(selectors.length * documents.length > 50_000, `only ${selectors.length * documents.length} pairs`);
    assert.deepEqual(disagreements, []);
  });
});
