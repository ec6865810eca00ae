/**
 * Creating and changing a subscription: Name, JSONPath (tried as it is typed, on an event the
 * person chooses), push to a URL or pull, and for push the Target URL, authentication and rate
 * limit; extensions; whether the service's notices reach it. The service checks every field; its
 * errors are shown beside the field they name. A subscription's delivery is fixed once created:
 * editing does not offer to change it.
 */
import { api, type ApiError, type Auth, type DeliveryKind, type ExtensionValue, type Subscription, type SubscriptionInput } from './api.js';
import type { ViewProps } from './app.js';
import { DESTINATION_KINDS } from './destination-kinds.js';
import { html } from './html.js';
import { href } from './routes.js';
import { Tester } from './tester.js';
import { asApiError, ErrorMessage, Heading, useTitle } from './ui.js';
import { useEffect, useLayoutEffect, useState } from './vendor/hooks.js';
import type { VNode } from './vendor/preact.js';

type Field = 'name' | 'jsonpath' | 'delivery' | 'target_url' | 'auth' | 'extensions' | 'rate_limit' | 'notices';
const FIELDS: readonly Field[] = ['name', 'jsonpath', 'delivery', 'target_url', 'auth', 'extensions', 'rate_limit', 'notices'];
/** The control that takes focus when its field is in error: for the delivery, the choice made. */
function controlOf(field: Field, draft: Draft): string {
  const controls: Record<Field, string> = {
    name: 'field-name',
    jsonpath: 'field-jsonpath',
    delivery: `field-delivery-${draft.delivery}`,
    target_url: 'field-target',
    auth: 'field-auth',
    extensions: 'field-extensions-add',
    rate_limit: 'field-rate',
    notices: 'field-notices',
  };
  return controls[field];
}

/** The schemes and broker URLs the service takes, from its registry of destination kinds. */
const TARGET_HELP = (() => {
  const or = (items: readonly string[]) => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`);
  const http = DESTINATION_KINDS.filter((kind) => kind.handler === 'push').flatMap((kind) => kind.schemes);
  const brokers = DESTINATION_KINDS.flatMap((kind) => (kind.handler === 'broker' && kind.form !== null ? [kind.form] : []));
  return (
    `Where matching events are POSTed: an ${or(http)} URL; or the message broker they are published to: ${or(brokers)}. ` +
    'Put credentials in Authentication, not in the URL.'
  );
})();

const AUTH_CHOICES: readonly { type: AuthType; label: string }[] = [
  { type: 'none', label: 'Nothing' },
  { type: 'basic', label: 'HTTP Basic (user name and password)' },
  { type: 'header', label: 'Authorization header (e.g. a bearer token)' },
  { type: 'oauth2', label: 'OAuth 2.0 client credentials (a bearer token from a token endpoint)' },
  { type: 'mtls', label: 'Client certificate (mutual TLS, https targets)' },
];

/**
 * The auth types the Target URL's kind of destination takes (a broker: HTTP Basic only), and the
 * one chosen (a record's, shown even where its URL no longer takes it); every type while the
 * URL's scheme is not yet one the service knows.
 */
function authChoices(targetUrl: string, chosen: AuthType): readonly { type: AuthType; label: string }[] {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(targetUrl.trim())?.[1]?.toLowerCase();
  const kind = DESTINATION_KINDS.find((k) => k.delivery === 'push' && scheme !== undefined && k.schemes.includes(scheme));
  if (kind === undefined) return AUTH_CHOICES;
  return AUTH_CHOICES.filter(({ type }) => type === 'none' || type === chosen || (kind.auth as readonly string[]).includes(type));
}

/** The error of the whole form, not of one field. */
const FORM_ERROR = 'form-error';

type AuthType = 'none' | 'basic' | 'header' | 'oauth2' | 'mtls';
/** What the service shows in place of a stored client secret or private key; sent back, it keeps them. */
const MASKED_SECRET = '********';
type ExtensionType = 'string' | 'integer' | 'boolean';
interface ExtensionRow {
  key: number;
  name: string;
  type: ExtensionType;
  value: string;
}

interface Draft {
  name: string;
  jsonpath: string;
  delivery: DeliveryKind;
  target_url: string;
  authType: AuthType;
  username: string;
  password: string;
  scheme: string;
  credentials: string;
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scope: string;
  audience: string;
  cert: string;
  key: string;
  ca: string;
  extensions: ExtensionRow[];
  rateLimit: string;
  notices: boolean;
}

let rowKeys = 0;

function draftOf(record: Subscription | undefined, jsonpath = ''): Draft {
  const auth = record?.auth ?? {};
  const basic = 'basic' in auth ? auth.basic : undefined;
  const header = 'header' in auth ? auth.header : undefined;
  const oauth2 = 'oauth2' in auth ? auth.oauth2 : undefined;
  const mtls = 'mtls' in auth ? auth.mtls : undefined;
  return {
    name: record?.name ?? '',
    jsonpath: record?.jsonpath ?? jsonpath,
    delivery: record?.delivery ?? 'push',
    target_url: record?.target_url ?? '',
    authType: 'type' in auth ? auth.type : 'none',
    username: basic?.username ?? '',
    password: basic?.password ?? '',
    scheme: header?.type ?? 'Bearer',
    credentials: header?.credentials ?? '',
    tokenUrl: oauth2?.token_url ?? '',
    clientId: oauth2?.client_id ?? '',
    clientSecret: oauth2?.client_secret ?? '',
    scope: oauth2?.scope ?? '',
    audience: oauth2?.audience ?? '',
    cert: mtls?.cert ?? '',
    key: mtls?.key ?? '',
    ca: mtls?.ca ?? '',
    extensions: Object.entries(record?.extensions ?? {}).map(([name, value]) => ({
      key: rowKeys++,
      name,
      type: typeof value === 'boolean' ? 'boolean' : typeof value === 'number' ? 'integer' : 'string',
      value: String(value),
    })),
    rateLimit: record?.rate_limit === null || record?.rate_limit === undefined ? '' : String(record.rate_limit),
    notices: record?.notices ?? false,
  };
}

/**
 * The body to send, or the fields the console can tell are wrong before sending. Pull sends no
 * target, credentials or rate limit (the service refuses them); a change never sends the delivery.
 */
function inputOf(draft: Draft, editing: boolean): { input: SubscriptionInput } | { errors: Partial<Record<Field, string>> } {
  const errors: Partial<Record<Field, string>> = {};
  const push = draft.delivery === 'push';
  const auth = authOf(draft);
  const extensions: Record<string, ExtensionValue> = {};
  for (const row of draft.extensions) {
    if (row.type === 'integer' && !/^-?\d+$/.test(row.value.trim())) {
      errors.extensions = `${row.name || 'An extension'}: the value must be a whole number`;
    }
    extensions[row.name] = row.type === 'integer' ? Number(row.value.trim()) : row.type === 'boolean' ? row.value === 'true' : row.value;
  }
  let rateLimit: number | null = null;
  if (push && draft.rateLimit.trim() !== '') {
    if (!/^\d+$/.test(draft.rateLimit.trim())) errors.rate_limit = 'a whole number of deliveries per second, or blank for no limit';
    else rateLimit = Number(draft.rateLimit.trim());
  }
  if (Object.keys(errors).length > 0) return { errors };
  const input: SubscriptionInput = { name: draft.name, jsonpath: draft.jsonpath, extensions, notices: draft.notices };
  if (!editing) input.delivery = draft.delivery;
  if (push) Object.assign(input, { target_url: draft.target_url, auth, rate_limit: rateLimit });
  return { input };
}

/** The `auth` the draft says; optional members left blank are not sent. */
function authOf(draft: Draft): Auth {
  const optional = (name: string, value: string) => (value.trim() === '' ? {} : { [name]: value });
  switch (draft.authType) {
    case 'basic':
      return { type: 'basic', basic: { username: draft.username, password: draft.password } };
    case 'header':
      return { type: 'header', header: { type: draft.scheme, credentials: draft.credentials } };
    case 'oauth2':
      return {
        type: 'oauth2',
        oauth2: {
          token_url: draft.tokenUrl,
          client_id: draft.clientId,
          client_secret: draft.clientSecret,
          ...optional('scope', draft.scope),
          ...optional('audience', draft.audience),
        },
      };
    case 'mtls':
      return { type: 'mtls', mtls: { cert: draft.cert, key: draft.key, ...optional('ca', draft.ca) } };
    case 'none':
      return {};
  }
}

export function SubscriptionForm(props: ViewProps & { uuid?: string; jsonpath?: string }): VNode {
  const editing = props.uuid !== undefined;
  const [record, setRecord] = useState<Subscription | undefined>(undefined);
  const [loadError, setLoadError] = useState<ApiError | undefined>(undefined);
  const [draft, setDraft] = useState<Draft>(() => draftOf(undefined, props.jsonpath));
  const [errors, setErrors] = useState<Partial<Record<Field, string>>>({});
  const [general, setGeneral] = useState<ApiError | undefined>(undefined);
  const [liveError, setLiveError] = useState<ApiError | undefined>(undefined);
  const [saving, setSaving] = useState(false);
  /** Where focus goes after a refused save: the first field in error, or the form's own error ('form'). */
  const [focusField, setFocusField] = useState<Field | 'form' | undefined>(undefined);
  useTitle(editing ? `Edit ${record?.name ?? 'subscription'}` : 'New subscription');

  useEffect(() => {
    if (props.uuid === undefined) return;
    api.subscription(props.uuid).then(
      (loaded) => {
        setRecord(loaded);
        setDraft(draftOf(loaded));
      },
      (error: unknown) => setLoadError(asApiError(error)),
    );
  }, []);

  // After a refused save, the first field in error takes focus, so its message is read; a refusal
  // of no one field (the subscription limit) is shown above the form, out of view from the button
  // that was pressed, and takes focus itself. In the render that shows the message: an effect
  // would wait for the next frame.
  useLayoutEffect(() => {
    if (focusField === undefined) return;
    document.getElementById(focusField === 'form' ? FORM_ERROR : controlOf(focusField, draft))?.focus();
    setFocusField(undefined);
  }, [focusField]);

  const set =
    <K extends keyof Draft>(key: K, field?: Field) =>
    (value: Draft[K]) => {
      setDraft((current) => ({ ...current, [key]: value }));
      if (field !== undefined && errors[field] !== undefined) setErrors(({ [field]: _, ...rest }) => rest);
    };
  const text = (event: Event) => (event.currentTarget as HTMLInputElement).value;

  async function save(event: Event): Promise<void> {
    event.preventDefault();
    setGeneral(undefined);
    const checked = inputOf(draft, editing);
    if ('errors' in checked) {
      setErrors(checked.errors);
      setFocusField(FIELDS.find((field) => checked.errors[field] !== undefined));
      return;
    }
    const { input } = checked;
    setSaving(true);
    try {
      const saved = props.uuid === undefined ? await api.create(input) : await api.update(props.uuid, input);
      await props.reload();
      props.notify(`Subscription “${saved.name}” ${editing ? 'saved' : 'created'}.`, href.detail(saved.uuid));
    } catch (error) {
      const failure = asApiError(error);
      const field = FIELDS.find((candidate) => candidate === failure.field);
      // A field this form does not show (the delivery of a subscription being changed) is the form's error.
      if (field === undefined || document.getElementById(controlOf(field, draft)) === null) {
        setErrors({});
        setGeneral(failure);
        setFocusField('form');
      } else {
        setErrors({ [field]: failure.problem });
        setFocusField(field);
      }
    } finally {
      setSaving(false);
    }
  }

  if (loadError !== undefined) {
    return html`<${Heading}>Edit subscription</${Heading}>
      <${ErrorMessage} error=${loadError} />
      <p><a href=${href.list}>Back to your subscriptions</a></p>`;
  }
  if (editing && record === undefined) {
    return html`<${Heading}>Edit subscription</${Heading}>
      <p class="muted">Loading…</p>`;
  }

  const jsonpathError = errors.jsonpath ?? liveError?.problem;
  return html`
    <${Heading}>${editing ? `Edit “${record?.name}”` : 'New subscription'}</${Heading}>
    <form class="subscription-form" novalidate onSubmit=${save}>
      ${general === undefined ? null : html`<${ErrorMessage} error=${general} id=${FORM_ERROR} focusable />`}
      <${TextField}
        id="field-name"
        label="Name"
        help="A label for you; at most 200 characters."
        value=${draft.name}
        error=${errors.name}
        onInput=${(event: Event) => set('name', 'name')(text(event))}
      />

      <div class="field">
        <label for="field-jsonpath">JSONPath</label>
        <textarea
          id="field-jsonpath"
          class="code"
          rows="2"
          spellcheck="false"
          autocomplete="off"
          autocapitalize="off"
          aria-invalid=${jsonpathError === undefined ? undefined : 'true'}
          aria-describedby=${jsonpathError === undefined ? 'field-jsonpath-help' : 'field-jsonpath-help field-jsonpath-error'}
          value=${draft.jsonpath}
          onInput=${(event: Event) => set('jsonpath', 'jsonpath')(text(event))}
        ></textarea>
        <p id="field-jsonpath-help" class="help">
          The events to send: those the expression selects anything in. RFC 9535 or Pacifica's jsonpath2; check it on an event below.
        </p>
        ${jsonpathError === undefined ? null : html`<p id="field-jsonpath-error" class="field-error">${jsonpathError}</p>`}
      </div>
      <details class="panel" open>
        <summary>Check the JSONPath against an event</summary>
        <${Tester} expression=${draft.jsonpath} subscriptions=${props.subscriptions} subscription=${props.uuid} onInvalid=${setLiveError} />
      </details>

      ${
        !editing
          ? html`<${DeliveryChoice} value=${draft.delivery} error=${errors.delivery} onChange=${set('delivery', 'delivery')} />`
          : draft.delivery === 'pull'
            ? html`<div class="field">
                <p class="label">Delivery</p>
                <p id="field-delivery-fixed">
                  Pull: you read its events from the service, at the address shown on its page. A subscription’s delivery is fixed once
                  created: to have events pushed to a URL, create a new subscription.
                </p>
              </div>`
            : null
      }
      ${
        draft.delivery === 'push'
          ? html`<${TextField}
        id="field-target"
        label="Target URL"
        help=${TARGET_HELP}
        value=${draft.target_url}
        error=${errors.target_url}
        inputmode="url"
        code
        onInput=${(event: Event) => set('target_url', 'target_url')(text(event))}
      />

      <fieldset class="field" aria-describedby=${errors.auth === undefined ? undefined : 'field-auth-error'}>
        <legend>Authentication</legend>
        <div class="field">
          <label for="field-auth">Sent to the target as</label>
          <select
            id="field-auth"
            value=${draft.authType}
            onChange=${(event: Event) => set('authType', 'auth')((event.currentTarget as HTMLSelectElement).value as AuthType)}
          >
            ${authChoices(draft.target_url, draft.authType).map(({ type, label }) => html`<option key=${type} value=${type}>${label}</option>`)}
          </select>
        </div>
        ${
          draft.authType === 'basic'
            ? html`<div class="row">
                <${TextField}
                  id="field-auth-username"
                  label="User name"
                  value=${draft.username}
                  onInput=${(event: Event) => set('username', 'auth')(text(event))}
                />
                <${TextField}
                  id="field-auth-password"
                  label="Password"
                  type="password"
                  value=${draft.password}
                  onInput=${(event: Event) => set('password', 'auth')(text(event))}
                />
              </div>`
            : draft.authType === 'header'
              ? html`<div class="row">
                  <${TextField}
                    id="field-auth-scheme"
                    label="Scheme"
                    value=${draft.scheme}
                    onInput=${(event: Event) => set('scheme', 'auth')(text(event))}
                  />
                  <${TextField}
                    id="field-auth-credentials"
                    label="Credentials"
                    type="password"
                    value=${draft.credentials}
                    onInput=${(event: Event) => set('credentials', 'auth')(text(event))}
                  />
                </div>`
              : draft.authType === 'oauth2'
                ? html`<${TextField}
                      id="field-auth-token-url"
                      label="Token URL"
                      help="The token endpoint, asked for a token with the client credentials grant (client authenticated by HTTP Basic)"
                      value=${draft.tokenUrl}
                      inputmode="url"
                      code
                      onInput=${(event: Event) => set('tokenUrl', 'auth')(text(event))}
                    />
                    <div class="row">
                      <${TextField}
                        id="field-auth-client-id"
                        label="Client ID"
                        value=${draft.clientId}
                        onInput=${(event: Event) => set('clientId', 'auth')(text(event))}
                      />
                      <${TextField}
                        id="field-auth-client-secret"
                        label="Client secret"
                        type="password"
                        help=${`Never shown again once saved (${MASKED_SECRET}): leave it to keep the stored secret`}
                        value=${draft.clientSecret}
                        onInput=${(event: Event) => set('clientSecret', 'auth')(text(event))}
                      />
                    </div>
                    <div class="row">
                      <${TextField}
                        id="field-auth-scope"
                        label="Scope (optional)"
                        value=${draft.scope}
                        onInput=${(event: Event) => set('scope', 'auth')(text(event))}
                      />
                      <${TextField}
                        id="field-auth-audience"
                        label="Audience (optional)"
                        value=${draft.audience}
                        onInput=${(event: Event) => set('audience', 'auth')(text(event))}
                      />
                    </div>`
                : draft.authType === 'mtls'
                  ? html`<${TextField}
                        id="field-auth-cert"
                        label="Certificate (PEM)"
                        help="The client certificate, then any intermediate certificates"
                        value=${draft.cert}
                        multiline
                        onInput=${(event: Event) => set('cert', 'auth')(text(event))}
                      />
                      <${TextField}
                        id="field-auth-key"
                        label="Private key (PEM, unencrypted)"
                        help=${`Never shown again once saved (${MASKED_SECRET}): leave it to keep the stored key`}
                        value=${draft.key}
                        multiline
                        onInput=${(event: Event) => set('key', 'auth')(text(event))}
                      />
                      <${TextField}
                        id="field-auth-ca"
                        label="Trusted roots (PEM, optional)"
                        help="Certificate authorities trusted for this target besides the system's"
                        value=${draft.ca}
                        multiline
                        onInput=${(event: Event) => set('ca', 'auth')(text(event))}
                      />`
                  : null
        }
        ${errors.auth === undefined ? null : html`<p id="field-auth-error" class="field-error">${errors.auth}</p>`}
      </fieldset>`
          : null
      }

      <${Extensions} rows=${draft.extensions} error=${errors.extensions} onChange=${set('extensions', 'extensions')} />

      ${
        draft.delivery === 'push'
          ? html`<${TextField}
        id="field-rate"
        label="Rate limit (deliveries per second)"
        help="At most this many deliveries a second to the target, 1 to 10,000; blank for no limit. Deliveries over it wait their turn: none is dropped."
        value=${draft.rateLimit}
        error=${errors.rate_limit}
        inputmode="numeric"
        onInput=${(event: Event) => set('rateLimit', 'rate_limit')(text(event))}
      />`
          : null
      }

      <div class="field choice">
        <input
          type="checkbox"
          id="field-notices"
          checked=${draft.notices}
          aria-describedby=${errors.notices === undefined ? 'field-notices-help' : 'field-notices-help field-notices-error'}
          aria-invalid=${errors.notices === undefined ? undefined : 'true'}
          onChange=${(event: Event) => set('notices', 'notices')((event.currentTarget as HTMLInputElement).checked)}
        />
        <label for="field-notices">Notices: also send me this service’s notices about my subscriptions (disabled, enabled, failing)</label>
        <p id="field-notices-help" class="help">
          The service’s own events about your other subscriptions, sent here when the JSONPath selects them too, e.g.
          <code class="wrap">$[?$.type == 'svc.notifications.subscription.disabled']</code>. Unticked, this subscription receives data
          events only, whatever its JSONPath.
        </p>
        ${errors.notices === undefined ? null : html`<p id="field-notices-error" class="field-error">${errors.notices}</p>`}
      </div>

      <div class="actions">
        <button type="submit" disabled=${saving}>${saving ? 'Saving…' : editing ? 'Save changes' : 'Create subscription'}</button>
        <a class="button secondary" href=${props.uuid === undefined ? href.list : href.detail(props.uuid)}>Cancel</a>
      </div>
    </form>
  `;
}

/**
 * Push to a URL, or pull: two radio buttons (arrow keys move between them). Only when creating:
 * a subscription's delivery is fixed once created.
 */
function DeliveryChoice(props: { value: DeliveryKind; error?: string; onChange: (value: DeliveryKind) => void }): VNode {
  const choices: Array<{ value: DeliveryKind; label: string; help: string }> = [
    { value: 'push', label: 'Push to a URL', help: 'The service POSTs each matching event to your target URL, as it arrives.' },
    {
      value: 'pull',
      label: 'Pull',
      help: 'You read the events from the service, in order, whenever you ask: for a subscriber that cannot accept a connection (a cluster node, a laptop, a machine behind NAT). No target URL, authentication or rate limit.',
    },
  ];
  return html`<fieldset class="field" aria-describedby=${props.error === undefined ? undefined : 'field-delivery-error'}>
    <legend>Delivery</legend>
    ${choices.map(
      (choice) =>
        html`<div class="choice" key=${choice.value}>
          <input
            type="radio"
            id=${`field-delivery-${choice.value}`}
            name="delivery"
            value=${choice.value}
            checked=${props.value === choice.value}
            aria-describedby=${`field-delivery-${choice.value}-help`}
            aria-invalid=${props.error === undefined ? undefined : 'true'}
            onChange=${() => props.onChange(choice.value)}
          />
          <label for=${`field-delivery-${choice.value}`}>${choice.label}</label>
          <p id=${`field-delivery-${choice.value}-help`} class="help">${choice.help}</p>
        </div>`,
    )}
    ${props.error === undefined ? null : html`<p id="field-delivery-error" class="field-error">${props.error}</p>`}
  </fieldset>`;
}

/** A labelled input with its help and its error, tied to it for screen readers. */
function TextField(props: {
  id: string;
  label: string;
  value: string;
  help?: string;
  error?: string;
  type?: string;
  inputmode?: string;
  code?: boolean;
  /** A textarea, for text of several lines (PEM). */
  multiline?: boolean;
  onInput: (event: Event) => void;
}): VNode {
  const described = [props.help === undefined ? null : `${props.id}-help`, props.error === undefined ? null : `${props.id}-error`]
    .filter((id) => id !== null)
    .join(' ');
  const control = props.multiline
    ? html`<textarea
        id=${props.id}
        class="code"
        rows="6"
        spellcheck="false"
        autocomplete="off"
        aria-invalid=${props.error === undefined ? undefined : 'true'}
        aria-describedby=${described === '' ? undefined : described}
        value=${props.value}
        onInput=${props.onInput}
      ></textarea>`
    : html`<input
        id=${props.id}
        type=${props.type ?? 'text'}
        class=${props.code ? 'code' : ''}
        inputmode=${props.inputmode}
        spellcheck=${props.code ? 'false' : undefined}
        autocomplete="off"
        aria-invalid=${props.error === undefined ? undefined : 'true'}
        aria-describedby=${described === '' ? undefined : described}
        value=${props.value}
        onInput=${props.onInput}
      />`;
  return html`<div class="field">
    <label for=${props.id}>${props.label}</label>
    ${control}
    ${props.help === undefined ? null : html`<p id=${`${props.id}-help`} class="help">${props.help}</p>`}
    ${props.error === undefined ? null : html`<p id=${`${props.id}-error`} class="field-error">${props.error}</p>`}
  </div>`;
}

/** CloudEvents extension attributes added to every event delivered: name, type, value per row. */
function Extensions(props: { rows: ExtensionRow[]; error?: string; onChange: (rows: ExtensionRow[]) => void }): VNode {
  const { rows, onChange } = props;
  const change = (key: number, part: Partial<ExtensionRow>) => onChange(rows.map((row) => (row.key === key ? { ...row, ...part } : row)));
  const value = (event: Event) => (event.currentTarget as HTMLInputElement | HTMLSelectElement).value;
  return html`<fieldset
    class="field"
    aria-describedby=${props.error === undefined ? 'field-extensions-help' : 'field-extensions-help field-extensions-error'}
  >
    <legend>Extensions</legend>
    <p id="field-extensions-help" class="help">
      CloudEvents extension attributes added to every event delivered: names of 1 to 20 lowercase letters or digits; values text, whole
      numbers or true/false. At most 16.
    </p>
    ${rows.map(
      (row, index) =>
        html`<div class="row extension" key=${row.key}>
          <div class="field">
            <label for=${`extension-${row.key}-name`}>Name <span class="visually-hidden">of extension ${index + 1}</span></label>
            <input
              id=${`extension-${row.key}-name`}
              class="code"
              autocomplete="off"
              spellcheck="false"
              value=${row.name}
              onInput=${(event: Event) => change(row.key, { name: value(event) })}
            />
          </div>
          <div class="field">
            <label for=${`extension-${row.key}-type`}>Type <span class="visually-hidden">of extension ${index + 1}</span></label>
            <select
              id=${`extension-${row.key}-type`}
              value=${row.type}
              onChange=${(event: Event) => {
                const type = value(event) as ExtensionType;
                change(row.key, { type, value: type === 'boolean' ? 'true' : row.value });
              }}
            >
              <option value="string">Text</option>
              <option value="integer">Whole number</option>
              <option value="boolean">True or false</option>
            </select>
          </div>
          <div class="field">
            <label for=${`extension-${row.key}-value`}>Value <span class="visually-hidden">of extension ${index + 1}</span></label>
            ${
              row.type === 'boolean'
                ? html`<select
                    id=${`extension-${row.key}-value`}
                    value=${row.value}
                    onChange=${(event: Event) => change(row.key, { value: value(event) })}
                  >
                    <option value="true">true</option>
                    <option value="false">false</option>
                  </select>`
                : html`<input
                    id=${`extension-${row.key}-value`}
                    autocomplete="off"
                    inputmode=${row.type === 'integer' ? 'numeric' : undefined}
                    value=${row.value}
                    onInput=${(event: Event) => change(row.key, { value: value(event) })}
                  />`
            }
          </div>
          <button type="button" class="secondary" onClick=${() => onChange(rows.filter((other) => other.key !== row.key))}>
            Remove <span class="visually-hidden">extension ${row.name || index + 1}</span>
          </button>
        </div>`,
    )}
    <button
      type="button"
      class="secondary"
      id="field-extensions-add"
      onClick=${() => onChange([...rows, { key: rowKeys++, name: '', type: 'string', value: '' }])}
    >
      Add an extension
    </button>
    ${props.error === undefined ? null : html`<p id="field-extensions-error" class="field-error">${props.error}</p>`}
  </fieldset>`;
}
