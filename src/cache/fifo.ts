// A first-in, first-out queue on an array and a head index: shift() is O(1) (Array.prototype.shift moves every
// element), and the served part is dropped once it is most of the array, so memory follows what is held.
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  /** The next to be served (undefined when empty). */
  get first(): T | undefined {
    return this.items[this.head];
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** Serves the first; only when not empty. */
  shift(): T {
    const item = this.items[this.head]!;
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}
