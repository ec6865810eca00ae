/**
 * The console's only way to the service: its public HTTP API, as any client uses it. Paths are
 * relative to the page (/console/), so the console works wherever a proxy mounts the service.
 * The identity is whatever the front proxy adds to these requests, as to any other.
 */

// The subscription's fields are declared once, in src/subscriptions/fields.ts; `npm run build`
// writes its declaration (console/tsconfig.fields.json) before it compiles the console.
import type { SubscriptionRecord, SubscriptionWrite } from '../../dist/types/subscriptions/fields.js';

export type { DeliveryKind, ExtensionValue } from '../../dist/types/subscriptions/fields.js';

export type Subscription = SubscriptionRecord;

/** What a create or change sends: a change never sends `delivery` (the service refuses to change it). */
export type SubscriptionInput = Omit<SubscriptionWrite, 'disabled'>;

/** Credentials as a create or change sends them: {} (none), basic or header. */
export type Auth = NonNullable<SubscriptionWrite['auth']>;

export interface Attempt {
  at: string;
  /** pull: the reader read past the event, which acknowledged it. */
  stage: 'policy' | 'deliver' | 'pull';
  status: number | null;
  error: string | null;
  duration_ms: number;
}

/** pending and expired are pull's: readable and not acknowledged yet; never read within the retention. */
export type DeliveryState = 'policy' | 'deliver' | 'pending' | 'delivered' | 'denied' | 'failed' | 'cancelled' | 'expired';

export interface Delivery {
  elm: string;
  event: { uuid: string; id: string; type: string; source: string };
  created: string;
  state: DeliveryState;
  policy: number | null;
  target: number | null;
  attempts: Attempt[];
}

export interface TryResult {
  matches: boolean;
  dialect: 'rfc9535' | 'jsonpath2';
  values: unknown[];
  paths: string[];
}

/** An error answer of the API (docs/errors.md), or a failure to reach it (status 0). */
export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** JSONPATH_SYNTAX: where reading the expression stopped (UTF-16 code units). */
    readonly position?: number,
  ) {
    super(message);
  }

  /**
   * The field of the body the message names first (`body.target_url: …` → `target_url`,
   * `body.auth.basic.password: …` → `auth`); undefined when it names none.
   */
  get field(): string | undefined {
    return /^body\.([a-z_]+)/.exec(this.message)?.[1];
  }

  /** The message without the field it starts with, to show beside that field. */
  get problem(): string {
    return this.field === undefined ? this.message : this.message.replace(/^body\.[^:]*:\s*/, '');
  }
}

const BASE = new URL('../', document.baseURI);

/** The answer's text, or the API's error (status 0: no answer at all). */
async function send(method: string, path: string, body?: string, signal?: AbortSignal): Promise<string> {
  let response: Response;
  try {
    response = await fetch(new URL(path, BASE), {
      method,
      headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      body,
      cache: 'no-store',
      credentials: 'same-origin',
      ...(signal ? { signal } : {}),
    });
  } catch (error) {
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new ApiError(0, 'UNREACHABLE', 'the service did not answer; check that it is running, then try again');
  }
  const text = await response.text();
  if (!response.ok) throw errorOf(response.status, text);
  return text;
}

async function call<T>(method: string, path: string, body?: string, signal?: AbortSignal): Promise<T> {
  const text = await send(method, path, body, signal);
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

function errorOf(status: number, text: string): ApiError {
  try {
    const body = JSON.parse(text) as { code?: unknown; message?: unknown; position?: unknown };
    if (typeof body.code === 'string' && typeof body.message === 'string') {
      return new ApiError(status, body.code, body.message, typeof body.position === 'number' ? body.position : undefined);
    }
  } catch {
    // not one of the API's answers: a proxy's page, say
  }
  return new ApiError(status, 'UNEXPECTED', `the service answered ${status} ${text.slice(0, 200)}`);
}

/**
 * The absolute address of an API path, for a person to copy into another client: the service's,
 * under whatever prefix the proxy serves it (the page's origin when there is none).
 */
export const apiUrl = (path: string) => new URL(path, BASE).href;

const json = (value: unknown) => JSON.stringify(value);
const at = (uuid: string) => `eventmatch/${encodeURIComponent(uuid)}`;
const PAGE = 1000;

export const api = {
  /** Every live subscription of the caller, oldest first (page by page). */
  async subscriptions(): Promise<Subscription[]> {
    const all: Subscription[] = [];
    for (let offset = 0; ; offset += PAGE) {
      const page = await call<Subscription[]>('GET', `eventmatch?limit=${PAGE}&offset=${offset}`);
      all.push(...page);
      if (page.length < PAGE) return all;
    }
  },
  subscription: (uuid: string) => call<Subscription>('GET', at(uuid)),
  /** Where a pull subscription's events are read, absolute, to copy into a reader. */
  eventsUrl: (uuid: string) => apiUrl(`${at(uuid)}/events`),
  create: (input: SubscriptionInput) => call<Subscription>('POST', 'eventmatch', json(input)),
  update: (uuid: string, input: Partial<SubscriptionInput> & { disabled?: boolean | null }) =>
    call<Subscription>('PUT', at(uuid), json(input)),
  remove: (uuid: string) => call<Subscription>('DELETE', at(uuid)),
  secret: (uuid: string) => call<{ secret: string }>('GET', `${at(uuid)}/secret`),
  rotateSecret: (uuid: string) => call<{ secret: string }>('POST', `${at(uuid)}/secret/rotate`),
  deliveries: (uuid: string, limit: number) => call<Delivery[]>('GET', `${at(uuid)}/deliveries?limit=${limit}`),
  retry: (uuid: string, elm: string) => call<Delivery>('POST', `${at(uuid)}/deliveries/${encodeURIComponent(elm)}/retry`),
  /** Queues again the failed and cancelled deliveries created since `since` (the API's UTC timestamp); how many. */
  recover: (uuid: string, since: string) => call<{ requeued: number }>('POST', `${at(uuid)}/deliveries/recover`, json({ since })),
  /** The event's text as the producer sent it, unparsed, so that nothing in it changes. */
  eventText: (uuid: string, elm: string) => send('GET', `${at(uuid)}/deliveries/${encodeURIComponent(elm)}/event`),
  /**
   * Tries `jsonpath` on the event whose JSON text is `eventText`, spliced into the body as it is:
   * the service reads the numbers the producer wrote, not what JSON.parse here would make of them.
   */
  tryExpression: (jsonpath: string, eventText: string, signal?: AbortSignal) =>
    call<TryResult>('POST', 'eventmatch/test', `{"jsonpath":${json(jsonpath)},"event":${eventText}}`, signal),
};
