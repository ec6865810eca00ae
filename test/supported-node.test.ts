/**
 * The Node.js lines the service runs on: the check its entry points make first, and `engines`,
 * which npm checks (engine-strict), say the same.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { isSupportedNode } from '../src/supported-node.js';

describe('supported Node.js lines', () => {
  it('refuses Node.js 20 and 22 before 22.19, and takes 22.19 on, 24 and 26', () => {
    for (const version of ['18.20.4', '20.20.2', '22.0.0', '22.18.1']) assert.equal(isSupportedNode(version), false, version);
    for (const version of ['22.19.0', '22.23.5', '24.0.0', '24.22.3', '26.12.1']) assert.equal(isSupportedNode(version), true, version);
  });

  it('has engines name the same lines, and npm refuse others', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } };
    assert.equal(pkg.engines.node, '^22.19.0 || ^24.0.0 || ^26.0.0');
    assert.match(readFileSync('.npmrc', 'utf8'), /^engine-strict=true$/m);
  });
});
