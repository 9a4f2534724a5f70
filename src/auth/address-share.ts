// One client address's share of the work before its sender is known: webapp envelopes to open in the worker lane and
// initData signatures to check, which wait in one bounded queue (INITDATA_VERIFY_QUEUE). A request holds one place in
// it from its envelope to the start of its check; past its share (a quarter), an address's next work goes to the
// low-priority lane instead, so that one address cannot fill the queue other clients' first requests wait in.
export class AddressShare {
  private readonly held = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Counts one place for `address`; false, counting nothing, when the address holds its share already. */
  enter(address: string): boolean {
    const n = this.held.get(address) ?? 0;
    if (n >= this.max) return false;
    this.held.set(address, n + 1);
    return true;
  }

  /** The end of a place `enter` counted (none kept at 0). */
  leave(address: string): void {
    const n = (this.held.get(address) ?? 1) - 1;
    if (n > 0) this.held.set(address, n);
    else this.held.delete(address);
  }

  /** A request's place, taken when its first work needs one and let go once. */
  claim(address: string): ShareClaim {
    return new ShareClaim(this, address);
  }
}

export class ShareClaim {
  private held = false;

  constructor(
    private readonly share: AddressShare,
    private readonly address: string,
  ) {}

  /** Holds the request's place (or keeps the one it holds); false when the address's share is full. */
  take(): boolean {
    if (!this.held) this.held = this.share.enter(this.address);
    return this.held;
  }

  /** Lets the place go; again does nothing. */
  release(): void {
    if (!this.held) return;
    this.held = false;
    this.share.leave(this.address);
  }
}
