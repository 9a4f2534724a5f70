// Credential checks under the failed-authentication budgets. One that costs the service work (a
// database lookup, an Ed25519 verification) is charged when it starts, so that checks running at
// once cannot all pass on a budget's last token, and refunded when it passes or throws (then the
// service failed, not the client). One refused without any work is charged too: it still costs
// an HTTP exchange, and a flood of made-up keys would otherwise run at full speed while one of
// keys that need a lookup is slowed. Past the budget: 429 auth_rate_limited.
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
