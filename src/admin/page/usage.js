// @ts-check
// The admin page: the usage card of the open project (events billed and stored this month, the allowance).
import { $, fmt, latestOnly, state } from './core.js';
import { api, describe, flash, isSignedOutError } from './api.js';

/** @typedef {import('./core.js').Usage} Usage */

/** @param {number | null | undefined} a */
export const allowanceText = (a) => (a === null || a === undefined ? 'unlimited' : `${fmt(a)} events / month`);

/** The usage card is asked for by the refresh loop and after a change (an allowance, a replay): the latest wins. */
export const usageRequest = latestOnly();

/** The open project's usage this month, drawn unless a later request or another project came meanwhile. */
export async function loadUsage() {
  const projectId = state.projectId;
  const current = usageRequest();
  try {
    const u = await api('GET', `/admin/projects/${projectId}/usage`);
    if (projectId === state.projectId && current()) renderUsage(u);
  } catch (err) {
    if (!isSignedOutError(err)) flash(`Usage: ${describe(err)}`, 'error');
  }
}

/** @param {Usage} u */
export function renderUsage(u) {
  /** @param {string} id @param {string} text @returns {HTMLElement} */
  const set = (id, text) => {
    const dd = $('usage').querySelector(`[data-testid="${id}"]`);
    dd.textContent = text;
    return dd;
  };
  set('usage-month', u.month);
  set('usage-billed', fmt(u.eventsBilled)).dataset.value = String(u.eventsBilled);
  set('usage-stored', fmt(u.eventsStored)).dataset.value = String(u.eventsStored);
  set('usage-allowance', allowanceText(u.eventAllowance));
}
