#!/usr/bin/env node
// Writes the generated documentation: docs/configuration.md from the settings table.
// Run through `npm run docs`, which builds first; test/config/configuration-doc.test.ts
// fails when the committed file differs from what this writes.
import { writeFileSync } from 'node:fs';
import { configurationDoc } from '../dist/src/config/configuration-doc.js';

const target = new URL('../docs/configuration.md', import.meta.url);
writeFileSync(target, configurationDoc());
console.log(`wrote ${target.pathname}`);
