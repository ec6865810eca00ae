/**
 * The time limit of one HTTP exchange through undici, given as the request's `signal`: once
 * `timeoutMs` have passed, the request (or the reading of its answer) is aborted with an
 * ExchangeTimeoutError. undici takes an EventEmitter with `aborted` and `reason` as it takes
 * an AbortSignal; in Node 20 an AbortController with its signal and listener costs about 80
 * times as much to make (~12 µs against ~0.15 µs), and the outbound thread makes six exchanges
 * an event.
 */
import { EventEmitter } from 'node:events';
import { ExchangeTimeoutError } from './network-error.js';

export class ExchangeDeadline extends EventEmitter {
  aborted = false;
  reason: ExchangeTimeoutError | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(timeoutMs: number) {
    super();
    this.timer = setTimeout(() => {
      this.aborted = true;
      this.reason = new ExchangeTimeoutError(timeoutMs);
      this.emit('abort');
    }, timeoutMs);
  }

  /**
   * What ended the exchange with `error`: the time-out, when it had passed (whatever error
   * undici made of the abort), or `error` itself.
   */
  cause(error: unknown): unknown {
    return this.reason ?? error;
  }

  /** The exchange is over: the time-out no longer applies. */
  clear(): void {
    clearTimeout(this.timer);
  }
}
