// One client address's share of the work before its sender is known: webapp envelopes to open in the worker lane and
// initData signatures to check, which wait in one bounded queue (INITDATA_VERIFY_QUEUE). A request holds one place in
// it from its envelope to the start of its check; past its share (a quarter), an address's next work goes to the
// low-priority lane instead, so that one address cannot fill the queue other clients' first requests wait in.
//
// An IPv6 address counts as its /64, which one subscriber holds at least: its addresses share one quarter rather than
// each taking its own. Strangers in one /64 (an office) then share it too, which costs them priority, never an answer.
import { prefix64 } from '../base/client-address.js';

export class AddressShare {
  private readonly held = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Counts one place for `address` (an IPv4 address or an IPv6 /64); false, counting nothing, when it holds its share already. */
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
    return new ShareClaim(this, prefix64(address) ?? address);
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
