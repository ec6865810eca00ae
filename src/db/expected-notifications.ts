/**
 * The notifications this instance expects for the subscriptions it creates. Such a row is applied
 * here as soon as its create commits, so reading it back when its notification comes is work for
 * nothing: on PostgreSQL, a read a create (a statement, and its rows parsed on the main thread).
 *
 * A new subscription's uuid is random and unknown to anyone until its create commits, and
 * notifications come in commit order, so the first notification naming it is its create's: that
 * one is taken here, and any later write of it, by any instance, is read as before. A create is
 * expected before it is sent, since its notification may come before its answer does.
 * Expectations are forgotten after a minute: a notification missed while the listening
 * connection was down never comes, and the poll reads such rows anyway.
 */
export const EXPECTED_FOR_MS = 60_000;

export class ExpectedNotifications {
  /** uuid → when it was expected (ms), oldest first. */
  private readonly since = new Map<string, number>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** A create of `uuid` is about to be sent. */
  expect(uuid: string): void {
    const now = this.now();
    for (const [old, at] of this.since) {
      if (now - at < EXPECTED_FOR_MS) break;
      this.since.delete(old);
    }
    this.since.set(uuid, now);
  }

  /** The create of `uuid` stored nothing (refused, or failed): no notification will come. */
  cancel(uuid: string): void {
    this.since.delete(uuid);
  }

  /** A notification named `uuid`: whether it was this instance's create's (and so needs no read). */
  take(uuid: string): boolean {
    return this.since.delete(uuid);
  }

  /** Creates whose notification is still expected. */
  get size(): number {
    return this.since.size;
  }
}
