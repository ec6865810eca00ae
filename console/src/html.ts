/** htm bound to Preact: `html\`<p>${text}</p>\`` builds a virtual DOM node, escaping every value. */
import htm from './vendor/htm.js';
import { h, type VNode } from './vendor/preact.js';

export const html = htm.bind(h) as (strings: TemplateStringsArray, ...values: unknown[]) => VNode;
