// The canonical field registry: `tg.<field>` properties of platform-origin events that are
// promoted into the "$tg" section. One typed table; the bucket a field must arrive in is its type.
// Fields follow the messenger's Bot API objects that a bot analytics product reports on.
import { hash } from 'node:crypto';

export type FieldType = 'string' | 'long' | 'float' | 'bool';

export const TG_REGISTRY: Readonly<Record<string, FieldType>> = Object.freeze({
  // Update envelope
  update_id: 'long',
  update_type: 'string',
  // Message
  message_id: 'long',
  message_thread_id: 'long',
  chat_id: 'long',
  chat_type: 'string',
  chat_title: 'string',
  chat_username: 'string',
  is_topic_message: 'bool',
  is_automatic_forward: 'bool',
  reply_to_message_id: 'long',
  via_bot_id: 'long',
  sender_chat_id: 'long',
  forward_origin_type: 'string',
  media_group_id: 'string',
  content_type: 'string',
  text_length: 'long',
  entity_types: 'string',
  command: 'string',
  start_param: 'string',
  edit_date: 'long',
  // User (from)
  from_id: 'long',
  is_bot: 'bool',
  is_premium: 'bool',
  language_code: 'string',
  // Interactions
  callback_query_id: 'string',
  callback_data: 'string',
  inline_query_id: 'string',
  inline_query: 'string',
  chosen_inline_result_id: 'string',
  web_app_query_id: 'string',
  button_text: 'string',
  // Payments (successful_payment, pre_checkout_query, refunded_payment)
  total_amount: 'long',
  currency: 'string',
  invoice_payload: 'string',
  shipping_option_id: 'string',
  provider_payment_charge_id: 'string',
  telegram_payment_charge_id: 'string',
  subscription_expiration_date: 'long',
  is_recurring: 'bool',
  is_first_recurring: 'bool',
  pre_checkout_query_id: 'string',
  star_count: 'long',
  shipping_query_id: 'string',
  paid_media_payload: 'string',
  // Membership (chat_member, my_chat_member, chat_join_request)
  old_status: 'string',
  new_status: 'string',
  invite_link: 'string',
  via_join_request: 'bool',
  via_chat_folder_invite_link: 'bool',
  // Business
  business_connection_id: 'string',
  business_message_id: 'long',
  is_enabled: 'bool',
  deleted_message_count: 'long',
  // Polls
  poll_id: 'string',
  poll_type: 'string',
  poll_option_count: 'long',
  poll_total_voter_count: 'long',
  poll_is_anonymous: 'bool',
  poll_option_ids: 'string',
  // Reactions
  reaction_type: 'string',
  reaction_emoji: 'string',
  reaction_count: 'long',
  // Boosts
  boost_id: 'string',
  boost_source: 'string',
  boost_add_date: 'long',
  boost_expiration_date: 'long',
});

export const TG_PREFIX = 'tg.';

/**
 * The messenger action an event reports, so that the same action reported over two connections
 * is billed once: a payment by its charge id, a message by chat and message id, otherwise the update id.
 */
export const ACTION_FIELDS: ReadonlySet<string> = new Set([
  'telegram_payment_charge_id',
  'chat_id',
  'message_id',
  'update_id',
]);

/**
 * Action keys are btree keys (billing_actions, billing_free_reports): one longer than this many
 * UTF-8 bytes is stored as its SHA-256 instead, so that no string a client sends can make an index
 * row too large for PostgreSQL (a 4 KiB charge id did, and failed every request of its commit).
 */
export const ACTION_KEY_MAX_BYTES = 256;

function bounded(key: string): string {
  if (key.length * 3 <= ACTION_KEY_MAX_BYTES || Buffer.byteLength(key) <= ACTION_KEY_MAX_BYTES) return key;
  const kind = key.slice(0, key.indexOf(':'));
  return `${kind}:sha256:${hash('sha256', key, 'base64url')}`;
}

export function actionKey(tg: Record<string, unknown>): string | null {
  const charge = tg.telegram_payment_charge_id;
  if (typeof charge === 'string' && charge !== '') return bounded(`payment:${charge}`);
  const chat = tg.chat_id;
  const message = tg.message_id;
  if (typeof chat === 'number' && typeof message === 'number') return `message:${chat}:${message}`;
  const update = tg.update_id;
  if (typeof update === 'number') return `update:${update}`;
  return null;
}
