/**
 * A small Server-Sent Events reader over node:http, for tests: it keeps what arrives (events
 * with their raw lines, and comments) and lets a test wait for the next item of a kind. Each
 * stream has a connection of its own (no agent): a stream does not occupy fetch's pool, which
 * would open a spare connection that a closing server then waits for (a connection that has
 * sent nothing yet is not idle to Node).
 */
import { get, type IncomingMessage } from 'node:http';

export interface StreamEvent {
  kind: 'event';
  id: string | undefined;
  event: string | undefined;
  data: string;
  /** The block's lines as they came, e.g. to see that data was one line. */
  lines: string[];
}

export interface StreamComment {
  kind: 'comment';
  text: string;
}

export type StreamItem = StreamEvent | StreamComment;

export class EventStreamReader {
  readonly items: StreamItem[] = [];
  /** Set once the server ended the stream (or the connection failed). */
  ended = false;
  private taken = 0;
  private notify: (() => void) | undefined;

  private constructor(readonly response: IncomingMessage) {}

  /** Opens the stream; resolves once the answer's headers are in (whatever the status). */
  static open(url: string, headers: Record<string, string> = {}): Promise<EventStreamReader> {
    return new Promise((resolve, reject) => {
      const request = get(url, { agent: false, headers: { accept: 'text/event-stream', ...headers } }, (response) => {
        const reader = new EventStreamReader(response);
        if (response.statusCode === 200) reader.pump();
        resolve(reader);
      });
      request.once('error', reject);
    });
  }

  get status(): number {
    return this.response.statusCode ?? 0;
  }

  /** An answer that is not a stream: its body as JSON. */
  async json<T>(): Promise<T> {
    let text = '';
    for await (const chunk of this.response) text += String(chunk);
    return JSON.parse(text) as T;
  }

  /** The next item not taken yet that `accept` wants (those before it are skipped), within `timeoutMs`. */
  async next<T extends StreamItem>(accept: (item: StreamItem) => item is T, timeoutMs = 5_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (this.taken < this.items.length) {
        const item = this.items[this.taken++]!;
        if (accept(item)) return item;
      }
      if (this.ended) throw new Error('the stream ended first');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`nothing came within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.notify = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  nextEvent(timeoutMs?: number): Promise<StreamEvent> {
    return this.next((item): item is StreamEvent => item.kind === 'event', timeoutMs);
  }

  nextComment(timeoutMs?: number): Promise<StreamComment> {
    return this.next((item): item is StreamComment => item.kind === 'comment', timeoutMs);
  }

  /** Resolves when the server has ended the stream, within `timeoutMs`. */
  async end(timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended) {
      if (Date.now() > deadline) throw new Error(`the stream did not end within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.notify = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** Hangs up. */
  close(): void {
    this.response.destroy();
  }

  private pump(): void {
    let buffer = '';
    this.response.setEncoding('utf8');
    this.response.on('data', (chunk: string) => {
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        this.items.push(parse(buffer.slice(0, end).split('\n')));
        buffer = buffer.slice(end + 2);
      }
      this.wake();
    });
    // Ended by the server, hung up by close(), or the connection failed: either way it has ended.
    this.response.once('close', () => {
      this.ended = true;
      this.wake();
    });
  }

  private wake(): void {
    const notify = this.notify;
    this.notify = undefined;
    notify?.();
  }
}

function parse(lines: string[]): StreamItem {
  if (lines.every((line) => line.startsWith(':'))) return { kind: 'comment', text: lines.map((line) => line.slice(1).trim()).join('\n') };
  const fields = new Map<string, string[]>();
  for (const line of lines) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    fields.set(name, [...(fields.get(name) ?? []), value]);
  }
  return {
    kind: 'event',
    id: fields.get('id')?.at(-1),
    event: fields.get('event')?.at(-1),
    data: (fields.get('data') ?? []).join('\n'),
    lines,
  };
}
