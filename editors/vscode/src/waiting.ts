// Waiting is what the Pending Approvals and the MCP servers' questions
// share: requests of a daemon that wait for the person's answer, each
// ending answered, or dropped (undefined) when the daemon no longer waits.

/** A request waiting for its answer. */
export interface Waiting<P> {
  /** A local id, unique for the life of the queue. */
  id: number;
  params: P;
  received: Date;
  /** Who asked: the id of the daemon (a workspace folder's), if given. */
  source?: string;
}

/** WaitingQueue holds the requests not yet answered, oldest first. */
export class WaitingQueue<P, A> {
  private next = 1;
  private readonly waiting = new Map<number, { item: Waiting<P>; resolve: (a: A | undefined) => void }>();
  private readonly listeners = new Set<() => void>();

  /** push records a request; the promise is its answer, or undefined when
   * it was dropped first. */
  protected push(params: P, now: Date, source?: string): { item: Waiting<P>; answer: Promise<A | undefined> } {
    const item: Waiting<P> = { id: this.next++, params, received: now, source };
    const answer = new Promise<A | undefined>((resolve) => this.waiting.set(item.id, { item, resolve }));
    this.changed();
    return { item, answer };
  }

  /** answer answers a request; false when it is no longer waiting. */
  answer(id: number, a: A): boolean {
    return this.end(id, a);
  }

  /** drop ends a request unanswered; false when it is no longer waiting. */
  protected drop(id: number): boolean {
    return this.end(id, undefined);
  }

  /** clear drops every request of a source (its daemon went away), or
   * every request when no source is given. */
  clear(source?: string): void {
    for (const [id, w] of [...this.waiting]) {
      if (source === undefined || w.item.source === source) {
        this.end(id, undefined);
      }
    }
  }

  private end(id: number, a: A | undefined): boolean {
    const w = this.waiting.get(id);
    if (!w) {
      return false;
    }
    this.waiting.delete(id);
    w.resolve(a);
    this.changed();
    return true;
  }

  has(id: number): boolean {
    return this.waiting.has(id);
  }

  get(id: number): Waiting<P> | undefined {
    return this.waiting.get(id)?.item;
  }

  /** list is the waiting requests, oldest first. */
  list(): Waiting<P>[] {
    return [...this.waiting.values()].map((w) => w.item);
  }

  get size(): number {
    return this.waiting.size;
  }

  onDidChange(fn: () => void): { dispose(): void } {
    this.listeners.add(fn);
    return { dispose: () => this.listeners.delete(fn) };
  }

  private changed(): void {
    for (const fn of this.listeners) {
      fn();
    }
  }
}
