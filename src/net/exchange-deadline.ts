/**
 * The time limit of one HTTP exchange through undici, whose `signal` is given as the request's:
 * once `timeoutMs` have passed, the request (or the reading of its answer) is aborted with an
 * ExchangeTimeoutError. Not AbortSignal.timeout: its timer cannot be cleared when the exchange
 * ends first, which is almost always.
 */
import { ExchangeTimeoutError } from './network-error.js';

export class ExchangeDeadline {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;

  constructor(timeoutMs: number) {
    this.timer = setTimeout(() => this.controller.abort(new ExchangeTimeoutError(timeoutMs)), timeoutMs);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * What ended the exchange with `error`: the time-out, when it had passed (whatever error
   * undici made of the abort), or `error` itself.
   */
  cause(error: unknown): unknown {
    return this.controller.signal.aborted ? (this.controller.signal.reason as unknown) : error;
  }

  /** The exchange is over: the time-out no longer applies. */
  clear(): void {
    clearTimeout(this.timer);
  }
}
