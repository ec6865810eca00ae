/**
 * One subscription: what it is, its state (and, when delivery disabled it, why and what to do),
 * edit, disable or enable, delete with confirmation, its signing secret (push) or how to read its
 * events (pull), and its deliveries.
 */
import { api, type ApiError, type Subscription } from './api.js';
import type { ViewProps } from './app.js';
import { Deliveries } from './deliveries.js';
import { showValue, Time } from './format.js';
import { html } from './html.js';
import { PullEvents } from './pull.js';
import { href } from './routes.js';
import { SigningSecret } from './secret.js';
import { asApiError, ConfirmDialog, ErrorMessage, Heading, useTitle } from './ui.js';
import { useEffect, useState } from './vendor/hooks.js';
import type { VNode } from './vendor/preact.js';

export function SubscriptionDetail(props: ViewProps & { uuid: string }): VNode {
  const [record, setRecord] = useState<Subscription | undefined>(undefined);
  const [loadError, setLoadError] = useState<ApiError | undefined>(undefined);
  const [actionError, setActionError] = useState<ApiError | undefined>(undefined);
  const [status, setStatus] = useState('');
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState(false);
  useTitle(record?.name ?? 'Subscription');

  useEffect(() => {
    api.subscription(props.uuid).then(setRecord, (error: unknown) => setLoadError(asApiError(error)));
  }, []);

  /** Read again when its deliveries move: a failure may have disabled it. */
  const reloadRecord = () => {
    api.subscription(props.uuid).then(setRecord, () => undefined);
  };

  /** Disables or enables it; true when that worked. */
  async function setDisabled(disabled: boolean): Promise<boolean> {
    setBusy(true);
    setActionError(undefined);
    setStatus('');
    try {
      const updated = await api.update(props.uuid, { disabled: disabled ? true : null });
      setRecord(updated);
      setStatus(disabled ? 'Disabled: no events are delivered until it is enabled.' : 'Enabled: new events are delivered again.');
      void props.reload();
      return true;
    } catch (error) {
      setActionError(asApiError(error));
      return false;
    } finally {
      setBusy(false);
    }
  }

  async function remove(): Promise<void> {
    setActionError(undefined);
    try {
      const removed = await api.remove(props.uuid);
      await props.reload();
      props.notify(`Subscription “${removed.name}” deleted.`, href.list);
    } catch (error) {
      setActionError(asApiError(error));
    }
  }

  const crumbs = html`<nav class="crumbs" aria-label="Breadcrumb"><a href=${href.list}>Subscriptions</a></nav>`;
  if (record === undefined) {
    return html`${crumbs}
      <${Heading}>Subscription</${Heading}>
      ${loadError === undefined ? html`<p class="muted">Loading…</p>` : html`<${ErrorMessage} error=${loadError} />`}`;
  }
  const disabled = record.disabled !== null;
  const pull = record.delivery === 'pull';
  return html`
    ${crumbs}
    <div class="view-head start">
      <${Heading}>${record.name}</${Heading}>
      ${disabled ? html`<span class="badge off">Disabled</span>` : html`<span class="badge ok">Active</span>`}
    </div>
    ${
      disabled && record.error !== null
        ? html`<div class="callout">
          <p><strong>A delivery failed for good, so delivery disabled this subscription.</strong> The last attempt ended with:</p>
          <p class="code wrap">${record.error}</p>
          <p>${'Fix the target, or '}<a href=${href.edit(record.uuid)}>change the target URL</a>${'; then enable the subscription and send the failed deliveries again below.'}</p>
        </div>`
        : null
    }
    <div class="actions">
      <a class="button" href=${href.edit(record.uuid)}>Edit</a>
      <button type="button" class="secondary" disabled=${busy} onClick=${() => setDisabled(!disabled)}>${disabled ? 'Enable' : 'Disable'}</button>
      <a class="button secondary" href=${href.tester({ subscription: record.uuid })}>Try its JSONPath</a>
      <button type="button" class="danger" onClick=${() => setConfirming(true)}>Delete…</button>
    </div>
    <p class="help" role="status">${status}</p>
    ${actionError === undefined ? null : html`<${ErrorMessage} error=${actionError} />`}

    <dl class="facts">
      <div><dt>JSONPath</dt><dd class="code wrap">${record.jsonpath}</dd></div>
      <div><dt>Delivery</dt><dd>${pull ? 'Pull: you read its events from the service' : 'Push to the target URL'}</dd></div>
      ${
        pull
          ? null
          : html`<div><dt>Target URL</dt><dd class="code wrap">${record.target_url}</dd></div>
              <div><dt>Authentication</dt><dd>${authSummary(record)}</dd></div>`
      }
      <div>
        <dt>Extensions</dt>
        <dd>
          ${
            Object.keys(record.extensions).length === 0
              ? 'None'
              : html`<ul class="plain">
                  ${Object.entries(record.extensions).map(([name, value]) => html`<li class="code">${name} = ${showValue(value)}</li>`)}
                </ul>`
          }
        </dd>
      </div>
      ${pull ? null : html`<div><dt>Rate limit</dt><dd>${record.rate_limit === null ? 'No limit' : `${record.rate_limit} deliveries per second`}</dd></div>`}
      <div>
        <dt>Notices</dt>
        <dd id="fact-notices">
          ${record.notices ? 'Sent here too: this service’s notices about your other subscriptions (disabled, enabled, failing)' : 'Not sent here: data events only'}
        </dd>
      </div>
      <div><dt>Owner</dt><dd>${record.user}</dd></div>
      <div><dt>Created</dt><dd><${Time} value=${record.created} /></dd></div>
      <div><dt>Last update</dt><dd><${Time} value=${record.updated} /></dd></div>
      ${
        disabled
          ? html`<div>
            <dt>Disabled</dt>
            <dd><${Time} value=${record.disabled!} />${record.error === null ? ', by its owner' : ', by delivery'}</dd>
          </div>`
          : null
      }
    </dl>

    ${pull ? html`<${PullEvents} uuid=${record.uuid} />` : html`<${SigningSecret} uuid=${record.uuid} />`}
    <${Deliveries} uuid=${record.uuid} pull=${pull} disabled=${disabled} enable=${() => setDisabled(false)} onActivity=${reloadRecord} />

    <${ConfirmDialog}
      id="delete-dialog"
      open=${confirming}
      title=${`Delete “${record.name}”?`}
      confirm="Delete subscription"
      danger
      onClose=${(confirmed: boolean) => {
        setConfirming(false);
        if (confirmed) void remove();
      }}
    >
      <p>It stops matching events now, and its pending deliveries are cancelled. This cannot be undone.</p>
    </${ConfirmDialog}>
  `;
}

function authSummary(record: Subscription): string {
  const { auth } = record;
  if (auth.type === 'basic') return `HTTP Basic, as user ${auth.basic?.username ?? ''}`;
  if (auth.type === 'header') return `Authorization header, scheme ${auth.header?.type ?? ''}`;
  if (auth.type === 'oauth2')
    return `OAuth 2.0 client credentials, client ${auth.oauth2?.client_id ?? ''} at ${auth.oauth2?.token_url ?? ''}`;
  if (auth.type === 'mtls') return 'Client certificate (mutual TLS)';
  return 'None';
}
