/**
 * The body a delivery sends: the event in structured mode with the subscription's extensions
 * added. Deliveries of one event to subscriptions with the same extensions share one body,
 * made once (a small cache of the latest: the deliveries of an event are sent close together).
 */
import { type SpecVersion, withExtensions } from '../cloudevents/index.js';
import type { EventRow } from '../db/stores/events.js';
import type { Extensions } from '../subscriptions/input.js';
import { RecentlyUsed } from '../recently-used.js';

const CACHED_BODIES = 256;

export class EventBodies {
  private readonly bodies = new RecentlyUsed<string, string>(CACHED_BODIES);

  body(event: Pick<EventRow, 'uuid' | 'spec_version' | 'body'>, extensions: string): string {
    // The stored body is the event's text as received: with nothing to add, it is the body.
    if (extensions === '{}') return event.body;
    const key = `${event.uuid}\u0000${extensions}`;
    let body = this.bodies.get(key);
    if (body === undefined) {
      const received = { specVersion: event.spec_version as SpecVersion, text: event.body };
      body = withExtensions(received, JSON.parse(extensions) as Extensions);
      this.bodies.set(key, body);
    }
    return body;
  }
}
