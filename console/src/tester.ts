/**
 * The JSONPath tester: an expression tried on an event as the person types (`POST
 * /eventmatch/test`: nothing is logged or delivered), showing whether it matches, the values and
 * their normalized paths, the dialect it was read in, and for a bad expression where reading
 * stopped. The event is pasted, opened from a file, or loaded from a recent delivery of one of
 * the caller's subscriptions. Used on its own page and in the subscription form.
 */
import { api, type ApiError, type Delivery, type Subscription, type TryResult } from './api.js';
import type { ViewProps } from './app.js';
import { DIALECTS, indentJson, parseTimestamp, plural, showValueLaidOut } from './format.js';
import { html } from './html.js';
import { href, type Route } from './routes.js';
import { asApiError, ErrorMessage, Heading, isAbort, useTitle } from './ui.js';
import { useEffect, useState } from './vendor/hooks.js';
import type { VNode } from './vendor/preact.js';

/** Typing is tried this long after the last key, so a fast typist sends one request, not ten. */
const TYPING_PAUSE_MS = 200;
const RECENT_DELIVERIES = 25;

type Outcome =
  | { kind: 'idle'; text: string }
  | { kind: 'valid'; dialect: string }
  | { kind: 'event'; text: string }
  | { kind: 'result'; result: TryResult }
  | { kind: 'invalid'; error: ApiError; expression: string }
  | { kind: 'failed'; error: ApiError };

export interface TesterProps {
  expression: string;
  /** The caller's subscriptions, whose recent deliveries' events can be loaded. */
  subscriptions: Subscription[] | undefined;
  /** The subscription whose deliveries are offered first, and a delivery whose event to load at once. */
  subscription?: string | undefined;
  delivery?: string | undefined;
  /** Tells the owner (the form) what the expression's syntax error is, if any. */
  onInvalid?: (error: ApiError | undefined) => void;
}

export function Tester(props: TesterProps): VNode {
  const [eventText, setEventText] = useState('');
  const [outcome, setOutcome] = useState<Outcome>({ kind: 'idle', text: '' });
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    const expression = props.expression;
    const idle = (text: string) => {
      setOutcome({ kind: 'idle', text });
      setBusy(false);
      props.onInvalid?.(undefined);
    };
    if (expression.trim() === '') return idle('Type a JSONPath to try it.');
    // Without an event the expression is still read, on an empty one: its errors show at once.
    const blank = eventText.trim() === '';
    const problem = blank ? undefined : eventProblem(eventText);
    if (problem !== undefined) {
      setOutcome({ kind: 'event', text: problem });
      setBusy(false);
      return;
    }
    setBusy(true);
    const controller = new AbortController();
    const timer = setTimeout(async () => {
      try {
        const result = await api.tryExpression(expression, blank ? '{}' : eventText, controller.signal);
        setOutcome(blank ? { kind: 'valid', dialect: result.dialect } : { kind: 'result', result });
        props.onInvalid?.(undefined);
      } catch (error) {
        if (isAbort(error)) return;
        const failure = asApiError(error);
        if (failure.code === 'JSONPATH_SYNTAX' || failure.field === 'jsonpath') {
          setOutcome({ kind: 'invalid', error: failure, expression });
          props.onInvalid?.(failure);
        } else setOutcome({ kind: 'failed', error: failure });
      }
      setBusy(false);
    }, TYPING_PAUSE_MS);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [props.expression, eventText]);

  const eventError =
    outcome.kind === 'event'
      ? outcome.text
      : outcome.kind === 'failed' && outcome.error.field === 'event'
        ? outcome.error.problem
        : undefined;
  return html`<div class="tester">
    <section class="tester-result" aria-labelledby="tester-result-title" aria-busy=${busy ? 'true' : 'false'}>
      <h2 id="tester-result-title">Result</h2>
      <${Verdict} outcome=${outcome} />
    </section>
    <section class="tester-event" aria-labelledby="tester-event-title">
      <h2 id="tester-event-title">Event</h2>
      <${EventLoader} ...${props} onLoad=${setEventText} />
      <div class="field">
        <label for="tester-event">Event: one CloudEvent, as JSON</label>
        <textarea
          id="tester-event"
          class="code"
          rows="12"
          wrap="off"
          spellcheck="false"
          autocomplete="off"
          aria-invalid=${eventError === undefined ? undefined : 'true'}
          aria-describedby=${eventError === undefined ? 'tester-event-help' : 'tester-event-help tester-event-error'}
          value=${eventText}
          onInput=${(event: Event) => setEventText((event.currentTarget as HTMLTextAreaElement).value)}
        ></textarea>
        <p id="tester-event-help" class="help">
          The structured-mode JSON of an event, as /receive takes it. It is only tried, never stored.
        </p>
        ${eventError === undefined ? null : html`<p id="tester-event-error" class="field-error">${eventError}</p>`}
      </div>
    </section>
  </div>`;
}

/** Why the text cannot be tried: not JSON, or not one object. */
function eventProblem(text: string): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `Not valid JSON: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'The event must be one JSON object.';
  return undefined;
}

function Verdict({ outcome }: { outcome: Outcome }): VNode {
  switch (outcome.kind) {
    case 'idle':
      return html`<p class="muted" aria-live="polite">${outcome.text}</p>`;
    case 'valid':
      return html`<p class="verdict-line" aria-live="polite">
        <span class="badge wait">Valid JSONPath</span>
        <span class="muted">${`read as ${DIALECTS[outcome.dialect] ?? outcome.dialect}. Paste an event, open one from a file or load a recent one to see what it matches.`}</span>
      </p>`;
    case 'event':
      return html`<p class="muted" aria-live="polite">Fix the event to try the JSONPath on it.</p>`;
    case 'failed':
      return html`<${ErrorMessage} error=${outcome.error} />`;
    case 'invalid':
      return html`<div class="verdict">
        <p class="verdict-line" aria-live="polite"><span class="badge bad">Invalid JSONPath</span></p>
        <p class="invalid-message">${outcome.error.problem}</p>
        ${outcome.error.position === undefined ? null : html`<${MarkedExpression} expression=${outcome.expression} position=${outcome.error.position} />`}
      </div>`;
    case 'result': {
      const { result } = outcome;
      return html`<div class="verdict">
        <p class="verdict-line" aria-live="polite">
          ${result.matches ? html`<span class="badge ok">Matches</span>` : html`<span class="badge off">No match</span>`}
          <span class="muted">${`${plural(result.values.length, 'value')} selected · read as ${DIALECTS[result.dialect] ?? result.dialect}`}</span>
        </p>
        ${
          result.values.length === 0
            ? null
            : html`<table class="values">
                <caption class="visually-hidden">
                  Selected values and their normalized paths
                </caption>
                <thead>
                  <tr>
                    <th scope="col">Path</th>
                    <th scope="col">Value</th>
                  </tr>
                </thead>
                <tbody>
                  ${result.values.map(
                    (value, index) =>
                      html`<tr>
                        <td data-label="Path" class="code path">${result.paths[index]}</td>
                        <td data-label="Value" class="code value">${showValueLaidOut(value)}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
        }
      </div>`;
    }
  }
}

/** The expression with the character where reading stopped marked (a space marks the end). */
export function MarkedExpression({ expression, position }: { expression: string; position: number }): VNode {
  const at = Math.min(position, expression.length);
  // A character outside the BMP is two code units: mark both.
  const width = /[\uD800-\uDBFF]/.test(expression.charAt(at)) ? 2 : 1;
  const marked = expression.slice(at, at + width);
  return html`<div class="marked">
    <pre
      class="code"
    ><code>${expression.slice(0, at)}<mark class=${marked === '' ? 'end' : ''}>${marked === '' ? ' ' : marked}</mark>${expression.slice(at + width)}</code></pre>
    <p class="help">Reading stopped ${marked === '' ? 'at the end of the expression' : `at position ${at}, the marked character`}.</p>
  </div>`;
}

/** Loading an event: from a file, or from a recent delivery of one of the caller's subscriptions. */
function EventLoader(props: TesterProps & { onLoad: (text: string) => void }): VNode {
  const { subscriptions, onLoad } = props;
  const [source, setSource] = useState<string>(props.subscription ?? '');
  const [deliveries, setDeliveries] = useState<Delivery[] | undefined>(undefined);
  const [choice, setChoice] = useState<string>('');
  const [problem, setProblem] = useState<ApiError | undefined>(undefined);
  const [loaded, setLoaded] = useState('');

  // The subscription offered first: the one given, else the first one.
  useEffect(() => {
    if (source === '' && subscriptions !== undefined && subscriptions.length > 0) setSource(subscriptions[0]!.uuid);
  }, [subscriptions]);

  useEffect(() => {
    if (source === '') return;
    let current = true;
    setDeliveries(undefined);
    api.deliveries(source, RECENT_DELIVERIES).then(
      (list) => {
        if (!current) return;
        setDeliveries(list);
        setChoice((chosen) => (list.some((delivery) => delivery.elm === chosen) ? chosen : (list[0]?.elm ?? '')));
      },
      (error: unknown) => current && setProblem(asApiError(error)),
    );
    return () => {
      current = false;
    };
  }, [source]);

  async function load(subscription: string, elm: string, what: string): Promise<void> {
    setProblem(undefined);
    try {
      onLoad(laidOut(await api.eventText(subscription, elm)));
      setLoaded(`Loaded ${what}.`);
    } catch (error) {
      setProblem(asApiError(error));
    }
  }

  // A delivery named in the address (the deliveries list links here) is loaded at once.
  useEffect(() => {
    if (props.subscription !== undefined && props.delivery !== undefined)
      void load(props.subscription, props.delivery, 'the delivery’s event');
  }, []);

  function openFile(event: Event): void {
    const file = (event.currentTarget as HTMLInputElement).files?.[0];
    if (file === undefined) return;
    file.text().then(
      (text) => {
        onLoad(laidOut(text));
        setLoaded(`Loaded ${file.name}.`);
      },
      () => setLoaded(`Could not read ${file.name}.`),
    );
  }

  const chosen = deliveries?.find((delivery) => delivery.elm === choice);
  return html`<div class="loader">
    ${
      subscriptions !== undefined && subscriptions.length > 0
        ? html`<fieldset class="loader-row">
            <legend>Load the event of a recent delivery</legend>
            <div class="field">
              <label for="tester-subscription">Subscription</label>
              <select
                id="tester-subscription"
                value=${source}
                onChange=${(event: Event) => setSource((event.currentTarget as HTMLSelectElement).value)}
              >
                ${subscriptions.map((subscription) => html`<option value=${subscription.uuid}>${subscription.name}</option>`)}
              </select>
            </div>
            <div class="field">
              <label for="tester-delivery">Recent delivery</label>
              <select
                id="tester-delivery"
                value=${choice}
                disabled=${deliveries === undefined || deliveries.length === 0}
                onChange=${(event: Event) => setChoice((event.currentTarget as HTMLSelectElement).value)}
              >
                ${
                  deliveries === undefined
                    ? html`<option value="">Loading…</option>`
                    : deliveries.length === 0
                      ? html`<option value="">No deliveries yet</option>`
                      : deliveries.map((delivery) => html`<option value=${delivery.elm}>${deliveryLabel(delivery)}</option>`)
                }
              </select>
            </div>
            <button
              type="button"
              class="secondary"
              disabled=${chosen === undefined}
              onClick=${() => chosen !== undefined && load(source, chosen.elm, `event ${chosen.event.id}`)}
            >
              Load event
            </button>
          </fieldset>`
        : null
    }
    <div class="field file">
      <label for="tester-file">${subscriptions !== undefined && subscriptions.length > 0 ? 'Or open an event file' : 'Open an event file'}</label>
      <input id="tester-file" type="file" accept=".json,application/json,application/cloudevents+json" onChange=${openFile} />
    </div>
    <p class="help" role="status">${loaded}</p>
    ${problem === undefined ? null : html`<${ErrorMessage} error=${problem} />`}
  </div>`;
}

/** A loaded event over lines, when it is JSON (anything else is shown as it is, for its error). */
function laidOut(text: string): string {
  try {
    JSON.parse(text);
  } catch {
    return text;
  }
  return indentJson(text);
}

function deliveryLabel(delivery: Delivery): string {
  const when = parseTimestamp(delivery.created).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'short' });
  return `${delivery.event.id} · ${when}`;
}

/** The tester on its own page: `#/tester?subscription=…&delivery=…&jsonpath=…`. */
export function TesterView(props: ViewProps & { route: Extract<Route, { view: 'tester' }> }): VNode {
  useTitle('JSONPath tester');
  const { route } = props;
  const [expression, setExpression] = useState(route.jsonpath ?? '');
  const [subscription, setSubscription] = useState<Subscription | undefined>(undefined);

  // Opened from a subscription: its expression, unless the address gives one.
  useEffect(() => {
    if (route.subscription === undefined) return;
    api.subscription(route.subscription).then(
      (record) => {
        setSubscription(record);
        if (route.jsonpath === undefined) setExpression((typed) => (typed === '' ? record.jsonpath : typed));
      },
      () => undefined,
    );
  }, []);

  return html`
    <${Heading}>JSONPath tester</${Heading}>
    <p class="lead">Write a JSONPath and see, as you type, whether it matches an event and what it selects. Nothing is stored, logged or delivered.</p>
    <div class="field">
      <label for="tester-jsonpath">JSONPath</label>
      <textarea
        id="tester-jsonpath"
        class="code"
        rows="2"
        spellcheck="false"
        autocomplete="off"
        autocapitalize="off"
        aria-describedby="tester-jsonpath-help"
        value=${expression}
        onInput=${(event: Event) => setExpression((event.currentTarget as HTMLTextAreaElement).value)}
      ></textarea>
      <p id="tester-jsonpath-help" class="help">
        RFC 9535 (<code>$.data[?@.mimetype == 'text/plain']</code>) or Pacifica's jsonpath2 (<code
          >$.data[*][?(@.destinationTable = "Files")]</code
        >).
      </p>
    </div>
    <${Tester}
      expression=${expression}
      subscriptions=${props.subscriptions}
      subscription=${route.subscription}
      delivery=${route.delivery}
    />
    <div class="actions">
      <a class="button" href=${href.create(expression)}>Create a subscription with this JSONPath</a>
      ${subscription === undefined ? null : html`<a class="button secondary" href=${href.detail(subscription.uuid)}>Back to ${subscription.name}</a>`}
    </div>
  `;
}
