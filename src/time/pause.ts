/**
 * A wait that can be cut short: a loop's idle pause that new work ends early, a reconnection
 * back-off that closing ends at once. One wait at a time.
 */
export class Pause {
  private cut: (() => void) | undefined;

  /** Resolves after `ms`, or as soon as `end()` is called. */
  for(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.cut === done) this.cut = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.cut = done;
    });
  }

  /** Ends the wait under way at once; false when there is none. */
  end(): boolean {
    const cut = this.cut;
    cut?.();
    return cut !== undefined;
  }
}
