/**
 * The console: a header with the two places to go (subscriptions, the JSONPath tester), and the
 * view the address names. The caller's subscriptions are loaded here, each time the view
 * changes, for the list and for the tester's choice of recent events.
 */
import { api, type ApiError, type Subscription } from './api.js';
import { SubscriptionDetail } from './detail.js';
import { SubscriptionForm } from './form.js';
import { html } from './html.js';
import { SubscriptionList } from './list.js';
import { href, navigate, parseRoute, type Route } from './routes.js';
import { TesterView } from './tester.js';
import { asApiError, Heading, useTitle } from './ui.js';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from './vendor/hooks.js';
import type { VNode } from './vendor/preact.js';

/** What every view may use of the app. */
export interface ViewProps {
  /** undefined while loading. */
  subscriptions: Subscription[] | undefined;
  /** Why they could not be loaded. */
  subscriptionsError: ApiError | undefined;
  reload: () => Promise<void>;
  /** Goes to `to` and says `text` there (a status message, read out by screen readers). */
  notify: (text: string, to: string) => void;
}

interface Notice {
  text: string;
  /** The view it belongs to: it is shown there only. */
  route: string;
}

const currentHash = () => (window.location.hash === '' ? href.list : window.location.hash);

export function App(): VNode {
  const [hash, setHash] = useState(currentHash);
  const [subscriptions, setSubscriptions] = useState<Subscription[] | undefined>(undefined);
  const [subscriptionsError, setSubscriptionsError] = useState<ApiError | undefined>(undefined);
  const [notice, setNotice] = useState<Notice | undefined>(undefined);
  const firstView = useRef(true);

  useEffect(() => {
    const changed = () => setHash(currentHash());
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);

  const reload = useCallback(async () => {
    try {
      setSubscriptions(await api.subscriptions());
      setSubscriptionsError(undefined);
    } catch (error) {
      setSubscriptionsError(asApiError(error));
    }
  }, []);

  useEffect(() => {
    void reload();
    // A notice belongs to the view it was given for: gone once the person moves on.
    setNotice((shown) => (shown !== undefined && shown.route === hash ? shown : undefined));
  }, [hash]);

  // A new view: its heading takes focus (not on the first, where the page itself has it). In
  // the commit that draws the view, before the browser paints it: an effect runs after the
  // paint, as late as the machine is busy, and would take the focus from a field the person has
  // already begun to type in.
  useLayoutEffect(() => {
    if (firstView.current) firstView.current = false;
    else {
      window.scrollTo(0, 0);
      document.getElementById('view-title')?.focus();
    }
  }, [hash]);

  const notify = useCallback((text: string, to: string) => {
    setNotice({ text, route: to });
    if (currentHash() === to) setHash(to);
    else navigate(to);
  }, []);

  const route = parseRoute(hash);
  const props: ViewProps = { subscriptions, subscriptionsError, reload, notify };
  const section = route.view === 'tester' ? 'tester' : 'subscriptions';
  return html`
    <a class="skip" href="#view-title" onClick=${skipToContent}>Skip to content</a>
    <header class="top">
      <a class="brand" href=${href.list}>Notifications</a>
      <nav aria-label="Console">
        <a href=${href.list} aria-current=${section === 'subscriptions' ? 'page' : undefined}>Subscriptions</a>
        <a href=${href.tester()} aria-current=${section === 'tester' ? 'page' : undefined}>JSONPath tester</a>
      </nav>
    </header>
    <main>
      <div role="status" class="notice-area">
        ${notice !== undefined && notice.route === hash ? html`<p class="notice">${notice.text}</p>` : null}
      </div>
      ${view(route, props, hash)}
    </main>
  `;
}

function view(route: Route, props: ViewProps, hash: string): VNode {
  switch (route.view) {
    case 'list':
      return html`<${SubscriptionList} ...${props} />`;
    case 'new':
      return html`<${SubscriptionForm} key=${hash} ...${props} jsonpath=${route.jsonpath} />`;
    case 'edit':
      return html`<${SubscriptionForm} key=${hash} ...${props} uuid=${route.uuid} />`;
    case 'detail':
      return html`<${SubscriptionDetail} key=${route.uuid} ...${props} uuid=${route.uuid} />`;
    case 'tester':
      return html`<${TesterView} key=${hash} ...${props} route=${route} />`;
    case 'missing':
      return html`<${Missing} />`;
  }
}

/** The skip link's target is the heading; the address keeps naming the view. */
function skipToContent(event: MouseEvent): void {
  event.preventDefault();
  document.getElementById('view-title')?.focus();
}

function Missing(): VNode {
  useTitle('Not found');
  return html`<${Heading}>Not found</${Heading}>
    <p>The console has no such page. <a href=${href.list}>Go to your subscriptions</a>.</p>`;
}
