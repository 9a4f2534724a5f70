// Credential checks under the failed-authentication budgets. One that costs the service work (a
// database lookup, an Ed25519 verification) is charged when it starts, so that checks running at
// once cannot all pass on a budget's last token, and refunded when it passes or throws (then the
// service failed, not the client). One refused without any work is charged too: a flood of
// garbage keys costs the service its HTTP work alone, which is the most a flood of unknown keys
// costs as well, so both are slowed by the same budget. Past the budget: 429 auth_rate_limited.
import { HttpError } from '../errors.js';
import type { AuthFailures } from '../limits/auth-failures.js';

export async function costlyCheck<T>(failures: AuthFailures, address: string, botId: string | undefined, check: () => Promise<T>, passed: (result: T) => boolean): Promise<T> {
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

/** A credential missing or refused from memory (wrong shape, known to be unknown): counted as a failure; past the budget, 429 instead. */
export function refuseCheaply(failures: AuthFailures, address: string, refusal: HttpError): never {
  const wait = failures.retryAfterS(address);
  if (wait > 0) throw new HttpError('auth_rate_limited', { retryAfterS: wait });
  failures.failed(address);
  throw refusal;
}
