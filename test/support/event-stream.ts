/**
 * A small Server-Sent Events reader over fetch, for tests: it keeps what arrives (events with
 * their raw lines, and comments) and lets a test wait for the next item of a kind.
 */

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
  private readonly client = new AbortController();
  private taken = 0;
  private notify: (() => void) | undefined;

  private constructor(readonly response: Response) {}

  /** Opens the stream; resolves once the answer's headers are in (whatever the status). */
  static async open(url: string, headers: Record<string, string> = {}): Promise<EventStreamReader> {
    const client = new AbortController();
    const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: client.signal });
    const reader = new EventStreamReader(response);
    reader.client.signal.addEventListener('abort', () => client.abort());
    if (response.ok) void reader.pump();
    return reader;
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
    this.client.abort();
  }

  private async pump(): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of this.response.body as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          this.items.push(parse(buffer.slice(0, end).split('\n')));
          buffer = buffer.slice(end + 2);
        }
        this.wake();
      }
    } catch {
      // Hung up by close(), or the connection failed: either way it has ended.
    }
    this.ended = true;
    this.wake();
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
