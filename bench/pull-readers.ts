/**
 * The client side of the fanout section: pull readers of a running server, each on a connection
 * of its own (node:http with `agent: false`: no keep-alive, no pool, so 10,000 readers are 10,000
 * sockets, as 10,000 subscribers would be).
 *
 * - A stream reader keeps `GET /eventmatch/{uuid}/events/stream` open. Its parsing is as light
 *   as it can be: the bytes are read as latin1 (cursors are ASCII; nothing else is decoded), and
 *   only `id:` lines are looked at; an event counts as arrived when the chunk holding its id does.
 *   When the server ends the stream (an end or an error the client did not cause) it is counted
 *   and the reader reconnects with `Last-Event-ID`, as an EventSource would, after 1–2 s.
 * - A long-poll reader asks `GET /eventmatch/{uuid}/events?after=…&wait=…` in a loop, sending
 *   back `next` at once after each answer; its events arrive when the answer's body has.
 *
 * An answer other than 200 is counted (503 apart) and asked again after its Retry-After (at most
 * 5 s; 1 s without one). Failures in a row back off, doubling up to 30 s (as the HTML standard
 * lets an EventSource do), until an event or an answer comes; each retry has up to 1 s of
 * jitter, so that readers do not come back in step. Each reader keeps the cursors it received
 * since `mark()`, so a phase can ask who has what, and its own counts, so that a phase can tell
 * how many readers met a failure as well as how many failures there were.
 */
import http from 'node:http';

export type ReaderKind = 'stream' | 'long poll';

/** What the readers of a pool met, since the pool's counts were last reset. */
export interface ReaderCounts {
  /** Long polls sent and streams opened (first opens, reconnects and retries). */
  requests: number;
  /** Long polls sent (a subset of `requests`). */
  longPolls: number;
  /** Streams that the server ended, or whose connection failed, while the client kept them. */
  serverEnded: number;
  /** Answers 503 to a long poll or a stream's opening. */
  unavailable: number;
  /** Other answers than 200 and 503. */
  otherStatus: number;
  /** Requests that failed before any answer (refused, reset), and long polls cut before their answer's end. */
  errors: number;
}

export function noCounts(): ReaderCounts {
  return { requests: 0, longPolls: 0, serverEnded: 0, unavailable: 0, otherStatus: 0, errors: 0 };
}

export interface ReaderOptions {
  port: number;
  owner: string;
  subscription: string;
  /** The cursor read up to; undefined: from the oldest event kept. */
  after?: string | undefined;
  /** A long poll's `wait`, seconds. */
  waitSeconds?: number;
}

const MAX_RETRY_AFTER_S = 5;
const MAX_BACKOFF_MS = 30_000;
const JITTER_MS = 1_000;
/** An EventSource's reconnection time (browsers take a few seconds; the lower end keeps the bench short), and a long poll's after a failure. */
const RETRY_MS = 1_000;

export abstract class PullReader {
  abstract readonly kind: ReaderKind;
  /** The last cursor received: where the reader would go on from. */
  last: string | undefined;
  /** Cursors received since `mark()`. */
  readonly seen = new Set<string>();
  /** When (performance.now()) the first and the latest cursor since `mark()` arrived. */
  firstNewAt: number | undefined;
  lastNewAt: number | undefined;
  /** This reader's share of the pool's counts. */
  readonly own = noCounts();
  protected request: http.ClientRequest | undefined;
  protected stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Failures since the last event or answer: the next retry waits 2^(failures - 1) times its delay. */
  protected failures = 0;

  constructor(
    protected readonly options: ReaderOptions,
    protected readonly counts: ReaderCounts,
  ) {
    this.last = options.after;
  }

  get subscription(): string {
    return this.options.subscription;
  }

  abstract start(): void;

  /** Forgets what arrived so far: `seen`, `firstNewAt` and `lastNewAt` count from now. */
  mark(): void {
    this.seen.clear();
    this.firstNewAt = undefined;
    this.lastNewAt = undefined;
  }

  /** Closes its connection and asks nothing more. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.request?.destroy();
    this.request = undefined;
  }

  protected arrived(cursor: string, at: number): void {
    this.last = cursor;
    this.failures = 0;
    if (this.seen.has(cursor)) return;
    this.seen.add(cursor);
    this.firstNewAt ??= at;
    this.lastNewAt = at;
  }

  protected get(path: string, headers: http.OutgoingHttpHeaders): http.ClientRequest {
    this.count('requests');
    const request = http.request({ host: '127.0.0.1', port: this.options.port, path, headers, agent: false });
    this.request = request;
    request.end();
    return request;
  }

  protected count(what: keyof ReaderCounts): void {
    this.counts[what]++;
    this.own[what]++;
  }

  /** Whether `response` is not a 200: then counted as refused, unless `request` is no longer this reader's. */
  protected notOk(request: http.ClientRequest, response: http.IncomingMessage): boolean {
    if (response.statusCode === 200) return false;
    if (request === this.request) this.refused(response);
    else response.resume();
    return true;
  }

  /** Counts an answer other than 200 and tries again after its Retry-After. */
  protected refused(response: http.IncomingMessage): void {
    response.resume();
    const retryAfter = Number(response.headers['retry-after']);
    const delayMs = Number.isFinite(retryAfter) && retryAfter >= 0 ? Math.min(retryAfter, MAX_RETRY_AFTER_S) * 1000 : RETRY_MS;
    this.failed(response.statusCode === 503 ? 'unavailable' : 'otherStatus', delayMs);
  }

  /** Counts `what` and opens again after `delayMs`, longer after failures in a row. */
  protected failed(what: keyof ReaderCounts, delayMs: number): void {
    this.count(what);
    this.failures++;
    this.request = undefined;
    if (this.stopped) return;
    const backoff = Math.min(MAX_BACKOFF_MS, delayMs * 2 ** (this.failures - 1));
    this.retryTimer = setTimeout(() => this.start(), backoff + Math.random() * JITTER_MS);
  }

  protected headers(): http.OutgoingHttpHeaders {
    return { 'http-remote-user': this.options.owner };
  }
}

export class StreamReader extends PullReader {
  readonly kind = 'stream' as const;
  /** Streams the client closed on purpose and opened again (`reconnect`). */
  reconnects = 0;

  start(): void {
    if (this.stopped) return;
    const headers = { ...this.headers(), accept: 'text/event-stream' } as http.OutgoingHttpHeaders;
    // An EventSource reconnects with the URL it began with and the last id it received.
    if (this.last !== undefined) headers['last-event-id'] = this.last;
    const request = this.get(`/eventmatch/${this.options.subscription}/events/stream`, headers);
    /** Whether this connection's end is already accounted for (the client closed it, or it was counted). */
    let settled = false;
    const ended = (what: keyof ReaderCounts) => {
      if (settled || request !== this.request) return;
      settled = true;
      this.failed(what, RETRY_MS);
    };
    request.on('error', () => ended('errors'));
    request.on('response', (response) => {
      if (this.notOk(request, response)) return void (settled = true);
      response.setEncoding('latin1');
      let rest = '';
      response.on('data', (chunk: string) => {
        const at = performance.now();
        const text = rest.length === 0 ? chunk : rest + chunk;
        let start = 0;
        for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
          // `id:` lines only; the data lines (the events) are skipped unread.
          if (text.charCodeAt(start) === 105 /* i */ && text.startsWith('id:', start)) {
            let value = text.slice(start + 3, end);
            if (value.endsWith('\r')) value = value.slice(0, -1);
            this.arrived(value.startsWith(' ') ? value.slice(1) : value, at);
          }
          start = end + 1;
        }
        rest = start === text.length ? '' : text.slice(start);
      });
      response.on('error', () => undefined);
      response.on('close', () => ended('serverEnded'));
    });
  }

  /** Closes the stream as a client that lost its connection, and opens it again at once with `Last-Event-ID`. */
  reconnect(): void {
    if (this.stopped) return;
    this.reconnects++;
    const request = this.request;
    this.request = undefined;
    request?.destroy();
    this.start();
  }
}

export class LongPollReader extends PullReader {
  readonly kind = 'long poll' as const;

  start(): void {
    if (this.stopped) return;
    const query = new URLSearchParams();
    if (this.last !== undefined) query.set('after', this.last);
    query.set('wait', String(this.options.waitSeconds ?? 60));
    this.count('longPolls');
    const request = this.get(`/eventmatch/${this.options.subscription}/events?${query}`, this.headers());
    let settled = false;
    const cut = () => {
      if (settled || request !== this.request) return;
      settled = true;
      this.failed('errors', RETRY_MS);
    };
    request.on('error', cut);
    request.on('response', (response) => {
      if (this.notOk(request, response)) return void (settled = true);
      response.setEncoding('utf8');
      let body = '';
      response.on('data', (chunk: string) => (body += chunk));
      response.on('error', () => undefined);
      response.on('end', () => {
        if (settled || request !== this.request) return;
        settled = true;
        const at = performance.now();
        let page: { events: Array<{ cursor: string }>; next: string };
        try {
          page = JSON.parse(body) as typeof page;
        } catch {
          this.failed('otherStatus', RETRY_MS);
          return;
        }
        this.failures = 0;
        for (const event of page.events) this.arrived(event.cursor, at);
        this.last = page.next;
        this.request = undefined;
        // The next poll at once, sending back `next` (which acknowledges what came); after this turn's
        // other answers, so that opening a connection does not hold back the times they are given.
        setImmediate(() => this.start());
      });
      response.on('close', cut);
    });
  }
}

/** Readers of one server, with their counts; `stopAll` closes every connection and stops every retry. */
export class ReaderPool {
  readonly counts = noCounts();
  readonly readers: PullReader[] = [];

  constructor(readonly port: number) {}

  stream(owner: string, subscription: string, after?: string): StreamReader {
    return this.add(new StreamReader({ port: this.port, owner, subscription, after }, this.counts));
  }

  longPoll(owner: string, subscription: string, waitSeconds: number, after?: string): LongPollReader {
    return this.add(new LongPollReader({ port: this.port, owner, subscription, after, waitSeconds }, this.counts));
  }

  streams(): StreamReader[] {
    return this.readers.filter((reader): reader is StreamReader => reader instanceof StreamReader);
  }

  /** Readers that met `what` at least once since the counts were reset. */
  affected(what: keyof ReaderCounts): number {
    return this.readers.filter((reader) => reader.own[what] > 0).length;
  }

  resetCounts(): void {
    Object.assign(this.counts, noCounts());
    for (const reader of this.readers) Object.assign(reader.own, noCounts());
  }

  /** Every reader stops and its socket is destroyed; the pool is empty after. */
  stopAll(): void {
    for (const reader of this.readers) reader.stop();
    this.readers.length = 0;
  }

  private add<R extends PullReader>(reader: R): R {
    this.readers.push(reader);
    return reader;
  }
}
