/**
 * A subscription's deliveries, newest first, each with its attempts (time, stage, status or
 * error, duration), a retry button and a way to try the JSONPath on its event; above them, a
 * way to send again every failed or cancelled one since a time (recover). Looked at again
 * every few seconds while the page is visible, so new events and attempts appear by themselves.
 * A pull subscription's are the same, read rather than sent: pending until read, then delivered
 * with an attempt of stage pull, or expired when never read.
 */
import { api, ApiError, type Attempt, type Delivery } from './api.js';
import { apiTimestamp, DeliveryStateBadge, localInputValue, plural, Time } from './format.js';
import { html } from './html.js';
import { href } from './routes.js';
import { asApiError, ErrorMessage } from './ui.js';
import { useCallback, useEffect, useRef, useState } from './vendor/hooks.js';
import type { VNode } from './vendor/preact.js';

const PAGE = 20;
/** The API's largest page of deliveries. */
const MOST = 200;
const POLL_MS = 3_000;
/** How far back a recover reaches unless told otherwise: a day, as long as the default retries try. */
const RECOVER_DEFAULT_MS = 24 * 3_600_000;

interface RetryState {
  status?: string;
  error?: ApiError;
  busy?: boolean;
}

export function Deliveries(props: {
  uuid: string;
  /** A pull subscription: its deliveries are read, not sent. */
  pull: boolean;
  disabled: boolean;
  enable: () => Promise<boolean>;
  /** The first list, or a delivery changed state or got an attempt: the subscription may have changed too (disabled by a failure). */
  onActivity: () => void;
}): VNode {
  const { uuid } = props;
  const [limit, setLimit] = useState(PAGE);
  const [deliveries, setDeliveries] = useState<Delivery[] | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [retries, setRetries] = useState<Record<string, RetryState>>({});

  const seen = useRef<string | undefined>(undefined);

  const refresh = useCallback(async () => {
    try {
      const list = await api.deliveries(uuid, limit);
      setDeliveries(list);
      setError(undefined);
      const now = list.map((delivery) => `${delivery.elm}:${delivery.state}:${delivery.attempts.length}`).join(' ');
      // The first list too: the subscription shown beside it was read when the view opened, and
      // a failure that disabled it may have come in between.
      if (seen.current !== now) props.onActivity();
      seen.current = now;
    } catch (failure) {
      setError(asApiError(failure));
    }
  }, [uuid, limit]);

  useEffect(() => {
    void refresh();
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void refresh();
    }, POLL_MS);
    return () => clearInterval(timer);
  }, [refresh]);

  const setRetry = (elm: string, state: RetryState) => setRetries((all) => ({ ...all, [elm]: state }));

  async function retry(delivery: Delivery, enableFirst: boolean): Promise<void> {
    setRetry(delivery.elm, { busy: true });
    if (enableFirst && !(await props.enable())) return setRetry(delivery.elm, {});
    try {
      const queued = await api.retry(uuid, delivery.elm);
      setDeliveries((list) => list?.map((item) => (item.elm === queued.elm ? queued : item)));
      setRetry(delivery.elm, {
        status: `Event ${delivery.event.id} is queued again: a policy check, then ${props.pull ? 'it is readable again, after your latest cursor' : 'delivery'}.`,
      });
    } catch (failure) {
      setRetry(delivery.elm, { error: asApiError(failure) });
    }
  }

  return html`<section class="deliveries" aria-labelledby="deliveries-title">
    <div class="section-head">
      <h2 id="deliveries-title">Deliveries</h2>
      <button type="button" class="secondary" onClick=${refresh}>Refresh</button>
    </div>
    <p class="help">
      ${
        props.pull
          ? 'The events this subscription matched, newest first: pending until read, delivered once a request reads past them. The list updates by itself.'
          : 'The events this subscription matched, newest first, and every attempt to deliver them. The list updates by itself.'
      }
    </p>
    ${error === undefined ? null : html`<${ErrorMessage} error=${error} />`}
    ${
      deliveries !== undefined && deliveries.length > 0
        ? html`<${Recover} uuid=${uuid} pull=${props.pull} disabled=${props.disabled} enable=${props.enable} onRecovered=${refresh} />`
        : null
    }
    ${
      deliveries === undefined
        ? html`<p class="muted">Loading…</p>`
        : deliveries.length === 0
          ? html`<p class="empty">No deliveries yet: events this subscription matches appear here.</p>`
          : html`<ol class="delivery-list">
              ${deliveries.map(
                (delivery) =>
                  html`<${DeliveryItem}
                    key=${delivery.elm}
                    uuid=${uuid}
                    delivery=${delivery}
                    retry=${retries[delivery.elm] ?? {}}
                    disabled=${props.disabled}
                    onRetry=${(enableFirst: boolean) => retry(delivery, enableFirst)}
                  />`,
              )}
            </ol>`
    }
    ${
      deliveries !== undefined && deliveries.length === limit && limit < MOST
        ? html`<button type="button" class="secondary" onClick=${() => setLimit(Math.min(limit + PAGE, MOST))}>
            Show older deliveries
          </button>`
        : null
    }
  </section>`;
}

/**
 * Sends again every failed or cancelled delivery of events matched since a time (the reader's
 * local time; a day ago unless changed). A disabled subscription is enabled first, as the
 * retry button does: its deliveries would only be cancelled again.
 */
function Recover(props: {
  uuid: string;
  pull: boolean;
  disabled: boolean;
  enable: () => Promise<boolean>;
  onRecovered: () => void;
}): VNode {
  const [since, setSince] = useState(() => localInputValue(new Date(Date.now() - RECOVER_DEFAULT_MS)));
  const [state, setState] = useState<RetryState>({});
  const what = props.pull ? 'cancelled deliveries' : 'failed deliveries';

  async function submit(event: Event): Promise<void> {
    event.preventDefault();
    const from = apiTimestamp(since);
    if (from === undefined) return setState({ error: new ApiError(0, 'CONSOLE', 'Choose the date and time to start from.') });
    setState({ busy: true });
    if (props.disabled && !(await props.enable())) return setState({});
    try {
      const { requeued } = await api.recover(props.uuid, from);
      const next = props.pull ? 'they are readable again, after your latest cursor' : 'delivery';
      setState({
        status:
          requeued === 0
            ? 'No failed or cancelled deliveries since then: nothing to send again.'
            : `${plural(requeued, 'delivery', 'deliveries')} queued again: a policy check, then ${next}.`,
      });
      props.onRecovered();
    } catch (failure) {
      setState({ error: asApiError(failure) });
    }
  }

  return html`<form class="recover" onSubmit=${submit}>
    <div class="field">
      <label for="recover-since">${props.pull ? 'Make cancelled deliveries readable again since' : 'Send failed deliveries again since'}</label>
      <input
        id="recover-since"
        type="datetime-local"
        required
        aria-describedby="recover-help"
        value=${since}
        aria-invalid=${state.error?.field === 'since' ? 'true' : undefined}
        onInput=${(e: Event) => setSince((e.target as HTMLInputElement).value)}
      />
    </div>
    <button type="submit" class="secondary" disabled=${state.busy === true}>
      ${props.disabled ? 'Enable and send again' : 'Send again'}
    </button>
    <p class="help" id="recover-help">
      ${
        props.disabled
          ? `The subscription is disabled, so its deliveries would only be cancelled: this enables it first, then sends its ${what} of events matched since then (your local time) again.`
          : `Every ${props.pull ? 'delivery cancelled when the subscription was disabled' : 'failed delivery, and every one cancelled when the subscription was disabled'}, of events matched since then (your local time), goes through the policy check again, then ${props.pull ? 'becomes readable again' : 'to the target'}.`
      }
    </p>
    <p class="help" role="status">${state.status ?? ''}</p>
    ${
      state.error === undefined
        ? null
        : state.error.code === 'SUBSCRIPTION_DISABLED'
          ? html`<div class="error-box" role="alert">
              <p>The subscription is disabled, so the deliveries would only be cancelled: enable it first, then send them again.</p>
            </div>`
          : html`<${ErrorMessage} error=${state.error} />`
    }
  </form>`;
}

function DeliveryItem(props: {
  uuid: string;
  delivery: Delivery;
  retry: RetryState;
  disabled: boolean;
  onRetry: (enableFirst: boolean) => void;
}): VNode {
  const { delivery, retry } = props;
  const id = `delivery-${delivery.elm}`;
  const refusedAsDisabled = retry.error?.code === 'SUBSCRIPTION_DISABLED';
  return html`<li class="delivery" aria-labelledby=${`${id}-title`}>
    <div class="delivery-head">
      <h3 id=${`${id}-title`}>Event <span class="code">${delivery.event.id}</span></h3>
      <${DeliveryStateBadge} state=${delivery.state} />
    </div>
    <p class="meta">
      <span class="code wrap">${delivery.event.type}</span> from <span class="code wrap">${delivery.event.source}</span>${', matched '}<${Time} value=${delivery.created} />
    </p>
    ${
      delivery.attempts.length === 0
        ? html`<p class="muted">No attempts yet.</p>`
        : html`<table class="attempts">
            <caption class="visually-hidden">
              Attempts for event ${delivery.event.id}
            </caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Stage</th>
                <th scope="col">Result</th>
                <th scope="col">Duration</th>
              </tr>
            </thead>
            <tbody>
              ${delivery.attempts.map((attempt) => html`<${AttemptRow} attempt=${attempt} />`)}
            </tbody>
          </table>`
    }
    <div class="actions">
      ${
        props.disabled
          ? html`<button type="button" class="secondary" disabled=${retry.busy === true} onClick=${() => props.onRetry(true)}>
            Enable and retry <span class="visually-hidden">event ${delivery.event.id}</span>
          </button>`
          : html`<button type="button" class="secondary" disabled=${retry.busy === true} onClick=${() => props.onRetry(false)}>
            Retry <span class="visually-hidden">event ${delivery.event.id}</span>
          </button>`
      }
      <a class="button secondary" href=${href.tester({ subscription: props.uuid, delivery: delivery.elm })}>
        Try the JSONPath on this event
      </a>
    </div>
    <p class="help" role="status">${retry.status ?? ''}</p>
    ${
      retry.error === undefined
        ? null
        : refusedAsDisabled
          ? html`<div class="error-box" role="alert">
            <p>The subscription is disabled, so the delivery would only be cancelled: enable it first, then retry.</p>
          </div>`
          : html`<${ErrorMessage} error=${retry.error} />`
    }
  </li>`;
}

const STAGES: Record<Attempt['stage'], string> = { policy: 'Policy check', deliver: 'Delivery', pull: 'Pull' };

function AttemptRow({ attempt }: { attempt: Attempt }): VNode {
  const ok = attempt.status !== null && attempt.status >= 200 && attempt.status < 300;
  return html`<tr>
    <td data-label="Time"><${Time} value=${attempt.at} /></td>
    <td data-label="Stage">${STAGES[attempt.stage]}</td>
    <td data-label="Result">
      ${attempt.stage === 'pull' && attempt.error === null ? 'Read and acknowledged' : null}
      ${attempt.stage === 'deliver' && attempt.status === null && attempt.error === null ? 'Confirmed by the broker' : null}
      ${attempt.status === null ? null : html`<span class=${`status ${ok ? 'ok' : 'bad'}`}>HTTP ${attempt.status}</span>`}
      ${attempt.error === null ? null : html`<span class="attempt-error">${attempt.error}</span>`}
    </td>
    <td data-label="Duration">${attempt.duration_ms} ms</td>
  </tr>`;
}
