#!/usr/bin/env node
// Writes the generated documentation: docs/configuration.md from the settings table; the parts of
// docs/api.md, docs/errors.md and docs/delivery.md marked <!-- kinds:NAME --> and the console's
// copy of the destination kinds (console/src/destination-kinds.ts) from src/destinations/kinds.ts.
// Run through `npm run docs`, which builds first (build again for the console to use a new copy);
// test/config/configuration-doc.test.ts and test/docs/destination-kinds.test.ts fail when a
// committed file differs from what this writes.
import { readFileSync, writeFileSync } from 'node:fs';
import { configurationDoc } from '../dist/src/config/configuration-doc.js';
import { consoleKindsModule, fillKinds } from '../dist/src/destinations/kinds-doc.js';

function write(path, text) {
  const target = new URL(`../${path}`, import.meta.url);
  writeFileSync(target, text);
  console.log(`wrote ${target.pathname}`);
}

write('docs/configuration.md', configurationDoc());
for (const page of ['docs/api.md', 'docs/errors.md', 'docs/delivery.md']) {
  write(page, fillKinds(readFileSync(new URL(`../${page}`, import.meta.url), 'utf8')));
}
write('console/src/destination-kinds.ts', consoleKindsModule());
