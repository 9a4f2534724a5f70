// Credential checks under the failed-authentication budgets. One that costs the service work (a
// database lookup, an Ed25519 verification) is charged when it starts, so that checks running at
// once cannot all pass on a budget's last token, and refunded when it passes or throws (then the
// service failed, not the client). One refused without any work is charged too: it still costs
// an HTTP exchange, and a flood of made-up keys would otherwise run at full speed while one of
// keys that need a lookup is slowed. Past the budget: 429 auth_rate_limited, except for what only this deployment can
// have issued (an API key carrying its tag): that is looked up all the same, one lookup at a time, so that a valid
// credential is never refused for a budget its address spent on something else, as a signature that verifies is not.
import { HttpError } from '../base/errors.js';

/** Where lookups past a budget wait their turn (limits/serial-lane.ts): one at a time, a bounded queue. */
export interface LookupLane {
  run<T>(key: string, work: () => Promise<T>): Promise<T>;
}

/** The failed-authentication budgets (limits/auth-failures.ts), per client address and per bot. */
export interface FailureBudget {
  /** Seconds to wait before this address (and bot, when given) may try again; 0 when it may now. */
  retryAfterS(address: string, botId?: string): number;
  failed(address: string, botId?: string): void;
  /** Charges a costly check up front: 0 when charged (refund() if it passes), else the seconds to wait. */
  charge(address: string, botId?: string): number;
  refund(address: string, botId?: string): void;
  /** The bot's budget alone: charged when a check starts running (true), refunded when it passes. */
  chargeBot(botId: string): boolean;
  refundBot(botId: string): void;
}

export async function costlyCheck<T>(
  failures: FailureBudget,
  address: string,
  botId: string | undefined,
  check: () => Promise<T>,
  passed: (result: T) => boolean,
): Promise<T> {
  const wait = failures.charge(address, botId);
  if (wait > 0) throw new HttpError('auth_rate_limited', { retryAfterS: wait });
  let result: T;
  try {
    result = await check();
  } catch (err) {
    failures.refund(address, botId);
    throw err;
  }
  if (passed(result)) failures.refund(address, botId);
  return result;
}

/**
 * A credential missing or refused from memory (wrong shape, known to be unknown): counted as a failure; past the
 * budget, 429 instead.
 */
export function refuseCheaply(failures: FailureBudget, address: string, refusal: HttpError): never {
  const wait = failures.retryAfterS(address);
  if (wait > 0) throw new HttpError('auth_rate_limited', { retryAfterS: wait });
  failures.failed(address);
  throw refusal;
}

/** A credential store that can tell whether resolving a key needs no query. */
export interface CredentialResolver<T> {
  cheap(key: string): boolean;
  /** Whether only this deployment can have made the key (a tagged API key): looked up whatever the budget. */
  carriesTag?(key: string): boolean;
  resolve(key: string): Promise<T | null>;
}

/**
 * The credential `key` names, from memory or by a lookup under the address's budget; an unknown one is refused either
 * way. Past the budget, a key carrying the deployment's tag is looked up in `pastBudget` (one at a time, a bounded queue:
 * 503 `overloaded` past it) and served when it is valid.
 */
export async function resolveCredential<T>(
  failures: FailureBudget,
  address: string,
  resolver: CredentialResolver<T>,
  key: string,
  refusal: () => HttpError,
  pastBudget?: LookupLane,
): Promise<T> {
  if (resolver.cheap(key)) {
    const known = await resolver.resolve(key);
    if (known === null) refuseCheaply(failures, address, refusal());
    return known;
  }
  const wait = failures.retryAfterS(address);
  if (wait > 0 && pastBudget !== undefined && resolver.carriesTag?.(key) === true) {
    const found = await pastBudget.run(address, () => resolver.resolve(key));
    if (found === null) {
      failures.failed(address);
      throw new HttpError('auth_rate_limited', { retryAfterS: wait });
    }
    return found;
  }
  const found = await costlyCheck(
    failures,
    address,
    undefined,
    () => resolver.resolve(key),
    (r) => r !== null,
  );
  if (found === null) throw refusal();
  return found;
}
