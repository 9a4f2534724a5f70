// A credential check that costs the service work (a database lookup, an Ed25519 verification),
// run under the failed-authentication budgets: charged when it starts, so that checks running at
// once cannot all pass on a budget's last token, and refunded when it passes or throws (then the
// service failed, not the client). Past the budget: 429 auth_rate_limited.
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
