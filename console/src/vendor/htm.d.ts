// Served at /console/vendor/htm.js from node_modules/htm (src/console/assets.ts); typed as the package.
export { default } from 'htm';
