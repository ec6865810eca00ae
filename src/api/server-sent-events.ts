/**
 * Server-Sent Events framing (the `text/event-stream` format of the HTML standard): an event is
 * its `id:`, `event:` and `data:` lines and a blank line; a line starting with `:` is a comment,
 * which clients ignore and proxies see as traffic.
 */

export const EVENT_STREAM_TYPE = 'text/event-stream; charset=utf-8';

/**
 * One event whose data is JSON text, on one `data:` line. A producer's pretty-printed JSON has
 * line breaks, which would cut the line: in JSON they can only be whitespace between tokens
 * (inside a string they must be escaped), so taking them out changes nothing of the value.
 */
export function jsonEvent(id: string, type: string, json: string): string {
  return `id: ${id}\nevent: ${type}\ndata: ${json.replace(/[\r\n]/g, '')}\n\n`;
}

/** A comment: no event for the client, bytes on the wire for whatever sits between. */
export function comment(text: string): string {
  return `: ${text}\n\n`;
}
