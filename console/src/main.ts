/** The console's entry: the page loads this module, which draws the app into it. */
import { App } from './app.js';
import { html } from './html.js';
import { render } from './vendor/preact.js';

const root = document.getElementById('app');
if (root !== null) {
  root.textContent = '';
  render(html`<${App} />`, root);
}
