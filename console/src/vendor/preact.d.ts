// Served at /console/vendor/preact.js from node_modules/preact (src/console/assets.ts); typed as the package.
export * from 'preact';
