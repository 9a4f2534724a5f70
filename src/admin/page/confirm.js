// @ts-check
// The admin page: two-step confirmations (no native confirm(): it blocks and cannot be styled).
import { el } from './core.js';
import { busy } from './api.js';

/**
 * A destructive action behind a second, explicit click in place, as for revoking a token: `slot`
 * holds the button; a click turns it into the question with "yes" and "Cancel". Returns the
 * function that draws the button again (its label and state follow the view).
 * @param {HTMLElement} slot
 * @param {{ testid: string, label: () => string, disabled: () => boolean, hidden?: () => boolean,
 *   question: () => string, yes: string, run: () => Promise<void>, onError?: (err: unknown) => void }} o
 * @returns {() => void}
 */
export function confirmable(slot, o) {
  const show = () => {
    // Nothing to act on (no plan to delete): no button, rather than a faded one.
    if (o.hidden?.()) {
      slot.replaceChildren();
      return;
    }
    const button = el('button', { type: 'button', class: 'danger', 'data-testid': o.testid }, o.label());
    button.disabled = o.disabled();
    button.addEventListener('click', () => {
      const yes = el('button', { type: 'button', class: 'danger', 'data-testid': `${o.testid}-confirm` }, o.yes);
      const no = el('button', { type: 'button', class: 'secondary', 'data-testid': `${o.testid}-cancel` }, 'Cancel');
      no.addEventListener('click', () => {
        show();
        slot.querySelector('button')?.focus();
      });
      yes.addEventListener('click', async () => {
        no.disabled = true;
        await busy(yes, o.run, o.onError);
        show();
      });
      slot.replaceChildren(el('span', { class: 'small question' }, o.question()), yes, no);
      yes.focus();
    });
    slot.replaceChildren(button);
  };
  show();
  return show;
}
