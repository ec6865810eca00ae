/** Work started and not finished yet (calls out, and their settlement): waited for at shutdown, and by tests. */
export class InFlight {
  private readonly running = new Set<Promise<void>>();

  add(work: Promise<void>): void {
    const tracked = work.finally(() => this.running.delete(tracked));
    this.running.add(tracked);
  }

  /** Resolves once nothing is running, including what started while waiting. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}
