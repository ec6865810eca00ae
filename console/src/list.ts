/** The caller's subscriptions: name, target (or pull), state (with the error that disabled one), last update. */
import type { ViewProps } from './app.js';
import { SubscriptionState, Time } from './format.js';
import { html } from './html.js';
import { href } from './routes.js';
import { ErrorMessage, Heading, useTitle } from './ui.js';
import type { VNode } from './vendor/preact.js';

export function SubscriptionList({ subscriptions, subscriptionsError }: ViewProps): VNode {
  useTitle('Subscriptions');
  return html`
    <div class="view-head">
      <${Heading}>Subscriptions</${Heading}>
      <a class="button" href=${href.create()}>New subscription</a>
    </div>
    ${
      subscriptionsError !== undefined
        ? html`<${ErrorMessage} error=${subscriptionsError} />`
        : subscriptions === undefined
          ? html`<p class="muted">Loading…</p>`
          : subscriptions.length === 0
            ? html`<div class="empty">
                <p>You have no subscriptions yet.</p>
                <p>
                  ${'A subscription sends the events its JSONPath matches to your target URL, or keeps them for you to read (pull). '}
                  <a href=${href.create()}>Create one</a>, or first <a href=${href.tester()}>try a JSONPath on an event</a>.
                </p>
              </div>`
            : html`<table class="subscriptions">
                <caption class="visually-hidden">
                  Your subscriptions
                </caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Target</th>
                    <th scope="col">State</th>
                    <th scope="col">Last update</th>
                  </tr>
                </thead>
                <tbody>
                  ${subscriptions.map(
                    (subscription) =>
                      html`<tr key=${subscription.uuid}>
                        <th scope="row" data-label="Name"><a href=${href.detail(subscription.uuid)}>${subscription.name}</a></th>
                        ${
                          subscription.delivery === 'pull'
                            ? html`<td data-label="Target"><span class="badge info">Pull</span></td>`
                            : html`<td data-label="Target" class="code wrap">${subscription.target_url}</td>`
                        }
                        <td data-label="State"><${SubscriptionState} subscription=${subscription} /></td>
                        <td data-label="Last update"><${Time} value=${subscription.updated} /></td>
                      </tr>`,
                  )}
                </tbody>
              </table>`
    }
  `;
}
