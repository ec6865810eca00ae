/**
 * A subscription's signing secret: hidden until revealed (it is not even fetched before), with
 * copy and rotate. Receivers verify each delivery's signature with it (Standard Webhooks).
 */
import { api, type ApiError } from './api.js';
import { html } from './html.js';
import { asApiError, ConfirmDialog, copyOrSelect, ErrorMessage } from './ui.js';
import { useState } from './vendor/hooks.js';
import type { VNode } from './vendor/preact.js';

const HIDDEN = '•'.repeat(32);

export function SigningSecret({ uuid }: { uuid: string }): VNode {
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const [shown, setShown] = useState(false);
  const [status, setStatus] = useState('');
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [confirming, setConfirming] = useState(false);

  async function current(): Promise<string> {
    if (secret !== undefined) return secret;
    const fetched = (await api.secret(uuid)).secret;
    setSecret(fetched);
    return fetched;
  }

  async function act(action: () => Promise<void>): Promise<void> {
    setError(undefined);
    setStatus('');
    try {
      await action();
    } catch (failure) {
      setError(asApiError(failure));
    }
  }

  const toggle = () =>
    act(async () => {
      if (!shown) await current();
      setShown(!shown);
    });

  const copy = () =>
    act(async () => {
      const value = await current();
      if (await copyOrSelect(value, 'secret-value')) {
        setStatus('The secret is copied to the clipboard.');
      } else {
        // Shown, so that there is something to select (before the selection is made, next frame).
        setShown(true);
        setStatus('The browser does not let the console copy here: the secret is shown and selected; copy it with Ctrl+C.');
      }
    });

  const rotate = () =>
    act(async () => {
      const rotated = (await api.rotateSecret(uuid)).secret;
      setSecret(rotated);
      setShown(true);
      setStatus(
        'The secret is rotated: give the new one to your receiver. For a while, deliveries carry a signature made with the previous secret too.',
      );
    });

  return html`<section class="secret" aria-labelledby="secret-title">
    <h2 id="secret-title">Signing secret</h2>
    <p class="help">
      Every delivery is signed with this secret (Standard Webhooks: the <code>webhook-signature</code> header); your receiver verifies it with the
      secret.
    </p>
    <div class="secret-row">
      <code id="secret-value" class="secret-value">${shown && secret !== undefined ? secret : html`<span aria-hidden="true">${HIDDEN}</span><span class="visually-hidden">hidden</span>`}</code>
      <div class="actions">
        <button type="button" class="secondary" aria-controls="secret-value" aria-expanded=${shown ? 'true' : 'false'} onClick=${toggle}>
          ${shown ? 'Hide' : 'Reveal'}
        </button>
        <button type="button" class="secondary" onClick=${copy}>Copy</button>
        <button type="button" class="secondary" onClick=${() => setConfirming(true)}>Rotate…</button>
      </div>
    </div>
    <p class="help" role="status">${status}</p>
    ${error === undefined ? null : html`<${ErrorMessage} error=${error} />`}
    <${ConfirmDialog}
      id="rotate-dialog"
      open=${confirming}
      title="Rotate the signing secret?"
      confirm="Rotate"
      onClose=${(confirmed: boolean) => {
        setConfirming(false);
        if (confirmed) void rotate();
      }}
    >
      <p>A new secret is made now and shown here. For a while (a day, unless the service is set otherwise) deliveries are signed with the previous secret as well, so your receiver has time to switch.</p>
    </${ConfirmDialog}>
  </section>`;
}
