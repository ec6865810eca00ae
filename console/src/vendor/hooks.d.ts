// Served at /console/vendor/hooks.js from node_modules/preact/hooks (src/console/assets.ts); typed as the package.
export * from 'preact/hooks';
