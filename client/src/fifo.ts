// The client's queue: a first-in first-out list whose removals from the front cost O(1) amortised, so dropping the
// oldest of 100,000 queued events is as cheap as queueing one.
export class Fifo<T> {
  #items: T[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  peek(): T | undefined {
    return this.#items[this.#head];
  }

  /** Removes and returns the first `n` items. */
  take(n: number): T[] {
    const out = this.#items.slice(this.#head, this.#head + n);
    this.#head += out.length;
    if (this.#head === this.#items.length) {
      // Empty: let go of what was taken.
      this.#items = [];
      this.#head = 0;
      return out;
    }
    // Compacted once the dead front outweighs the live part: each item is moved O(1) times overall.
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return out;
  }

  map<U>(f: (item: T) => U): U[] {
    return this.#items.slice(this.#head).map(f);
  }
}
