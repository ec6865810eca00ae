/**
 * How to read a pull subscription's events: its events URL, absolute, and `curl` commands to copy
 * (a loop reading with `after`, which acknowledges what was read, and the Server-Sent Events
 * stream). The commands carry no identity: the front proxy adds it, as to this page's requests.
 */
import { api } from './api.js';
import { html } from './html.js';
import { copyOrSelect } from './ui.js';
import { useState } from './vendor/hooks.js';
import type { VNode } from './vendor/preact.js';

/** A reader in shell: each request sends the `next` of the one before, which acknowledges it. */
export function readingLoop(eventsUrl: string): string {
  return [
    'after=0',
    'while :; do',
    `  page=$(curl -sf "${eventsUrl}?after=$after&wait=30") || { sleep 5; continue; }`,
    `  echo "$page" | jq -c '.events[].event'    # handle the events here`,
    `  after=$(echo "$page" | jq -r .next)        # the next request acknowledges them`,
    'done',
  ].join('\n');
}

/** The same events as they come, as Server-Sent Events (`id:` is the cursor). */
export function streamCommand(eventsUrl: string): string {
  return `curl -N -H 'Accept: text/event-stream' "${eventsUrl}/stream"`;
}

export function PullEvents({ uuid }: { uuid: string }): VNode {
  const [status, setStatus] = useState('');
  const url = api.eventsUrl(uuid);
  const copy = async (text: string, id: string, what: string) => {
    setStatus(
      (await copyOrSelect(text, id))
        ? `${what} is copied to the clipboard.`
        : `The browser does not let the console copy here: ${what.toLowerCase()} is selected; copy it with Ctrl+C.`,
    );
  };
  const pieces = [
    { id: 'pull-loop', title: 'Read them in a loop', what: 'The reading loop', text: readingLoop(url) },
    { id: 'pull-stream', title: 'Or follow them as a stream', what: 'The stream command', text: streamCommand(url) },
  ];

  return html`<section class="pull" aria-labelledby="pull-title">
    <h2 id="pull-title">Reading its events</h2>
    <p class="help">
      Events this subscription matches wait at this address until you read them, oldest first. Each request after a cursor
      acknowledges the events up to it: they show as delivered below. Events stay readable until retention removes them; one never read
      by then expires.
    </p>
    <div class="field">
      <p class="label">Events URL</p>
      <div class="copy-row">
        <code id="events-url" class="copy-value">${url}</code>
        <button type="button" class="secondary" onClick=${() => copy(url, 'events-url', 'The events URL')}>
          Copy <span class="visually-hidden">the events URL</span>
        </button>
      </div>
    </div>
    ${pieces.map(
      (piece) =>
        html`<div class="field" key=${piece.id}>
          <h3 id=${`${piece.id}-title`}>${piece.title}</h3>
          <pre class="copy-value" id=${piece.id}><code>${piece.text}</code></pre>
          <button type="button" class="secondary" onClick=${() => copy(piece.text, piece.id, piece.what)}>
            Copy <span class="visually-hidden">${piece.what.toLowerCase()}</span>
          </button>
        </div>`,
    )}
    <p class="help">
      The commands carry no identity: send them through the front proxy, as this page’s requests go, and it adds yours (sign in to it as it
      asks). The loop needs <code>curl</code> and <code>jq</code>. Each event is the CloudEvent as a target would receive it, with this
      subscription’s extensions.
    </p>
    <p class="help" role="status">${status}</p>
  </section>`;
}
