// Mini-app sessions: the user a webapp request speaks for, from initData signed with Ed25519.
// A session reuses one initData for every batch, so a verified one is kept (by a digest of bot,
// messenger bot id and initData) until it expires. A signature check costs a worker ~95 µs, so
// checks are charged to the failure budgets of the client address and of the bot; past a budget
// the check still runs, in a low-priority lane, so that no budget ever refuses a signature that
// verifies (an attacker behind the same carrier NAT as real users, or flooding one bot from many
// addresses, cannot lock new sessions out); one that fails there is refused 429, or, when only its address's
// share of the queue sent it there, charged and refused 401 as anywhere else.
import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { HttpError } from '../base/errors.js';
import type { UserSeen } from '../base/model.js';
import type { AddressShare, ShareClaim } from './address-share.js';
import { type FailureBudget, refuseCheaply } from './credential-checks.js';
import { checkAge, dataCheckString, parseInitData } from './initdata.js';

export interface SignatureCheck {
  message: string;
  signature: string;
  publicKeys: readonly string[];
}

export interface SessionOptions {
  publicKeys: readonly string[];
  maxAgeS: number;
  failures: FailureBudget;
  /**
   * Runs an Ed25519 check; `low`: for a client past a failure budget. `admit`, asked when a
   * normal-priority check gets its turn: false sends it to the low-priority lane instead.
   */
  verify: (check: SignatureCheck, priority: 'normal' | 'low', admit?: () => boolean) => Promise<boolean>;
  /** Seconds; injected so tests control expiry. */
  nowS?: () => number;
  /** Verified sessions kept. */
  maxEntries?: number;
  /**
   * Each address's share of the queue, which its envelopes count in too: a check waits in it until its turn, and past
   * the share in the low-priority lane, so that one address cannot fill the queue with forged strings that are charged
   * only as they run.
   */
  share: AddressShare;
}

interface Verified {
  user: UserSeen;
  authDate: number;
}

export class MiniAppSessions {
  private readonly verified: LRUCache<string, Verified>;
  private readonly nowS: () => number;
  /** hits: answered from memory; misses: a signature was checked. Read by metrics. */
  readonly stats = { hits: 0, misses: 0 };

  constructor(private readonly o: SessionOptions) {
    this.nowS = o.nowS ?? (() => Math.floor(Date.now() / 1000));
    this.verified = new LRUCache<string, Verified>({ max: o.maxEntries ?? 200_000, ttl: o.maxAgeS * 1000 });
  }

  /** Each address's share of the queue of work before authentication (see SessionOptions.share). */
  get share(): AddressShare {
    return this.o.share;
  }

  /**
   * The user `initData` speaks for, for the bot `botId` (messenger id `messengerBotId`), or an HttpError. `claim`: the
   * request's place in its address's share, if its envelope took one (the check waits in that place).
   */
  async check(
    address: string,
    botId: string,
    messengerBotId: string,
    initData: string,
    claim: ShareClaim = this.o.share.claim(address),
  ): Promise<UserSeen> {
    const key = hash('sha256', `${botId}\n${messengerBotId}\n${initData}`, 'base64');
    const hit = this.verified.get(key);
    if (hit !== undefined) {
      const age = checkAge(hit.authDate, this.nowS(), this.o.maxAgeS);
      if (age !== null) throw new HttpError(age);
      this.stats.hits++;
      return hit.user;
    }
    const failures = this.o.failures;
    const parsed = parseInitData(initData);
    if (!parsed.ok) refuseCheaply(failures, address, new HttpError(parsed.code));
    const now = this.nowS();
    const age = checkAge(parsed.data.authDate, now, this.o.maxAgeS);
    if (age !== null) refuseCheaply(failures, address, new HttpError(age));
    const check = {
      message: dataCheckString(messengerBotId, parsed.data.fields),
      signature: parsed.data.signature,
      publicKeys: this.o.publicKeys,
    };
    this.stats.misses++;
    // The address and the bot are charged when the check starts running, not while it waits for the lane: a thousand
    // real users opening the mini-app at once, from one bot or from one address (a carrier's NAT, a benchmark), would
    // otherwise spend the budgets by waiting, and be sent to the low-priority lane for it. Checks run at most WORKERS - 1
    // at once, so at most that many start on a budget's last token. A check that finds a budget spent when its turn
    // comes runs in the low-priority lane.
    const wait = failures.retryAfterS(address, botId);
    if (wait > 0 || !claim.take()) {
      if (!(await this.o.verify(check, 'low'))) {
        // Sent here by its address's share of the queue alone, with budget left: a failure like any other, charged
        // to the address and the bot and answered as such (a flood past its share must still spend its budget).
        if (wait === 0 && failures.charge(address, botId) === 0) throw new HttpError('initdata_signature_invalid');
        throw new HttpError('auth_rate_limited', { retryAfterS: Math.max(1, failures.retryAfterS(address, botId)) });
      }
    } else {
      let addressCharged = false;
      let botCharged = false;
      let started = false;
      const leaveQueue = () => {
        if (started) return;
        started = true;
        claim.release();
      };
      const admit = () => {
        leaveQueue();
        addressCharged = failures.charge(address) === 0;
        botCharged = addressCharged && failures.chargeBot(botId);
        return botCharged;
      };
      const refund = () => {
        if (addressCharged) failures.refund(address);
        if (botCharged) failures.refundBot(botId);
      };
      let ok: boolean;
      try {
        ok = await this.o.verify(check, 'normal', admit);
      } catch (err) {
        // The service failed (a full lane), not the client.
        refund();
        throw err;
      } finally {
        leaveQueue();
      }
      if (ok) refund();
      else if (!botCharged)
        // Checked in the low-priority lane: a budget was spent while it waited.
        throw new HttpError('auth_rate_limited', { retryAfterS: Math.max(1, failures.retryAfterS(address, botId)) });
      else throw new HttpError('initdata_signature_invalid');
    }
    const ttl = (parsed.data.authDate + this.o.maxAgeS - now) * 1000;
    if (ttl > 0) this.verified.set(key, { user: parsed.data.user, authDate: parsed.data.authDate }, { ttl });
    return parsed.data.user;
  }
}
