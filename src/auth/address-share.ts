// One client address's share of the work waiting before its sender is known: webapp envelopes to open and initData
// signatures to check, which wait in one bounded queue (INITDATA_VERIFY_QUEUE). Past its share (a quarter), an
// address's next work waits in the low-priority lane instead, so that one address cannot fill the queue other clients'
// first requests wait in.
export class AddressShare {
  private readonly held = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Counts one piece of work for `address`; false, counting nothing, when the address holds its share already. */
  enter(address: string): boolean {
    const n = this.held.get(address) ?? 0;
    if (n >= this.max) return false;
    this.held.set(address, n + 1);
    return true;
  }

  /** The end of a piece of work `enter` counted (none kept at 0). */
  leave(address: string): void {
    const n = (this.held.get(address) ?? 1) - 1;
    if (n > 0) this.held.set(address, n);
    else this.held.delete(address);
  }
}
