// Every update of the messenger's Bot API, mapped once to canonical events: one table, used by both framework
// packages (@tg-ingest/grammy, @tg-ingest/telegraf). Each `tg.*` key written here is a field of the service's
// registry in the bucket its type asks for, so the service promotes it into the event's `$tg` section (a test holds
// the two together). Pure: the same update gives the same events.
import type { EventType } from '../types.js';

/** The `User` object of the Bot API, as far as it is read here. */
export interface MessengerUser {
  id: number;
  is_bot?: boolean;
  first_name?: string;
  last_name?: string;
  username?: string;
  language_code?: string;
  is_premium?: boolean;
}

/** An update as the Bot API sends it: `update_id` and one field named for its type (any framework's Update type). */
export interface Update {
  update_id: number;
}

/** One event an update maps to, before ids and delivery. */
export interface MappedEvent {
  eventName: string;
  eventType: EventType;
  /** The person the event is about; null when the update names none (a channel post, a poll's new state). */
  user: MessengerUser | null;
  /** When it happened (Unix seconds), when the update says. */
  date: number | null;
  /** Message text or caption, or an inline query: only with `captureText`. */
  text?: string;
  propsString: Record<string, string>;
  propsLong: Record<string, number>;
  propsBool: Record<string, boolean>;
}

export interface MapOptions {
  /** Sends message text, captions and inline queries as the event's `text`. Default false. */
  captureText?: boolean;
}

type Obj = Record<string, unknown>;

const MAX_DATE_S = 253_402_300_799;
/** A deep link's start parameter: up to 64 of these characters. Anything else after /start is text a person typed. */
const START_PARAM = /^[A-Za-z0-9_-]{1,64}$/;
type Mapper = (payload: Obj, e: Builder, o: MapOptions) => void;

/** Builds one event's properties, keeping only values of the type the field is registered with. */
class Builder {
  eventName: string;
  eventType: EventType;
  user: MessengerUser | null = null;
  date: number | null = null;
  text: string | undefined;
  readonly propsString: Record<string, string> = {};
  readonly propsLong: Record<string, number> = {};
  readonly propsBool: Record<string, boolean> = {};

  constructor(type: EventType, name: string) {
    this.eventType = type;
    this.eventName = name;
  }

  str(field: string, v: unknown): void {
    if (typeof v === 'string' && v !== '') this.propsString[`tg.${field}`] = v;
  }
  long(field: string, v: unknown): void {
    if (typeof v === 'number' && Number.isSafeInteger(v)) this.propsLong[`tg.${field}`] = v;
  }
  bool(field: string, v: unknown): void {
    if (typeof v === 'boolean') this.propsBool[`tg.${field}`] = v;
  }
  by(u: unknown): void {
    if (isUser(u)) this.user = u;
  }
  /** A date the service accepts (up to the year 9999); anything else leaves the time the update was seen. */
  at(seconds: unknown): void {
    if (typeof seconds === 'number' && Number.isSafeInteger(seconds) && seconds > 0 && seconds <= MAX_DATE_S)
      this.date = seconds;
  }
  chat(c: unknown): void {
    const chat = obj(c);
    this.long('chat_id', chat.id);
    this.str('chat_type', chat.type);
  }

  done(): MappedEvent {
    const { eventName, eventType, user, date, text, propsString, propsLong, propsBool } = this;
    return {
      eventName,
      eventType,
      user,
      date,
      ...(text === undefined ? {} : { text }),
      propsString,
      propsLong,
      propsBool,
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Messages: one mapper for every update that carries a Message.

/** Kinds of message content, in the order they are looked for. */
const CONTENT = [
  'text',
  'animation',
  'audio',
  'document',
  'paid_media',
  'photo',
  'sticker',
  'story',
  'video',
  'video_note',
  'voice',
  'contact',
  'dice',
  'game',
  'poll',
  'venue',
  'location',
  'invoice',
  'web_app_data',
  'new_chat_members',
  'left_chat_member',
  'new_chat_title',
  'new_chat_photo',
  'pinned_message',
  'users_shared',
  'chat_shared',
  'write_access_allowed',
  'boost_added',
  'giveaway',
] as const;

function message(name: string, edited: boolean): Mapper {
  return (m, e, o) => {
    const pay = obj(m.successful_payment);
    const refund = obj(m.refunded_payment);
    e.by(m.from);
    e.chat(m.chat);
    e.at(edited ? m.edit_date : m.date);
    e.str('business_connection_id', m.business_connection_id);
    if (m.successful_payment !== undefined || m.refunded_payment !== undefined) {
      // A payment is its own action, named by its charge id: billed once however it is reported.
      const p = m.successful_payment !== undefined ? pay : refund;
      e.eventType = 'payment';
      e.eventName = m.successful_payment !== undefined ? 'successful_payment' : 'refunded_payment';
      payment(p, e);
      e.long('subscription_expiration_date', p.subscription_expiration_date);
      e.bool('is_recurring', p.is_recurring);
      e.bool('is_first_recurring', p.is_first_recurring);
      e.long('message_id', m.message_id);
      return;
    }
    // An edit, like a reaction, is not the message itself: without message_id it bills as its own update.
    if (edited) e.long('edit_date', m.edit_date);
    else e.long('message_id', m.message_id);
    e.long('message_thread_id', m.message_thread_id);
    e.bool('is_topic_message', m.is_topic_message);
    e.bool('is_automatic_forward', m.is_automatic_forward);
    e.long('reply_to_message_id', obj(m.reply_to_message).message_id);
    e.long('via_bot_id', obj(m.via_bot).id);
    e.long('sender_chat_id', obj(m.sender_chat).id);
    e.str('forward_origin_type', obj(m.forward_origin).type);
    e.str('media_group_id', m.media_group_id);
    e.str('content_type', CONTENT.find((k) => m[k] !== undefined) ?? 'other');
    const text = typeof m.text === 'string' ? m.text : typeof m.caption === 'string' ? m.caption : undefined;
    const entities = Array.isArray(m.entities)
      ? m.entities
      : Array.isArray(m.caption_entities)
        ? m.caption_entities
        : [];
    if (text !== undefined) e.long('text_length', text.length);
    const types = [...new Set(entities.map((x) => obj(x).type).filter((t): t is string => typeof t === 'string'))];
    if (types.length > 0) e.str('entity_types', types.join(','));
    const cmd = text === undefined ? null : command(text, entities);
    if (cmd !== null && !edited) {
      e.eventName = 'command';
      e.str('command', cmd.name);
      if (cmd.name === 'start' && START_PARAM.test(cmd.payload)) e.str('start_param', cmd.payload);
    } else e.eventName = name;
    if (o.captureText && text !== undefined) e.text = text;
  };
}

/** `/start@my_bot payload` → {name: "start", payload: "payload"}, when a bot_command entity opens the text. */
function command(text: string, entities: unknown[]): { name: string; payload: string } | null {
  const first = obj(entities[0]);
  if (first.type !== 'bot_command' || first.offset !== 0 || typeof first.length !== 'number') return null;
  const name = text.slice(1, first.length).split('@')[0]!.toLowerCase();
  return name === '' ? null : { name, payload: text.slice(first.length).trim() };
}

function payment(p: Obj, e: Builder): void {
  e.long('total_amount', p.total_amount);
  e.str('currency', p.currency);
  e.str('invoice_payload', p.invoice_payload);
  e.str('telegram_payment_charge_id', p.telegram_payment_charge_id);
  e.str('provider_payment_charge_id', p.provider_payment_charge_id);
  e.str('shipping_option_id', p.shipping_option_id);
}

function membership(u: Obj, e: Builder): void {
  e.by(u.from);
  e.chat(u.chat);
  e.at(u.date);
  e.str('old_status', obj(u.old_chat_member).status);
  e.str('new_status', obj(u.new_chat_member).status);
  e.str('invite_link', obj(u.invite_link).invite_link);
  e.bool('via_join_request', u.via_join_request);
  e.bool('via_chat_folder_invite_link', u.via_chat_folder_invite_link);
}

function boost(b: Obj, e: Builder): void {
  const source = obj(b.source);
  e.chat(b.chat);
  e.by(source.user);
  e.str('boost_id', b.boost_id);
  e.str('boost_source', source.source);
}

function reactionEmoji(list: unknown): string | undefined {
  if (!Array.isArray(list)) return undefined;
  const shown = list
    .map((r) => obj(r).emoji ?? obj(r).custom_emoji_id ?? obj(r).type)
    .filter((x) => typeof x === 'string');
  return shown.length > 0 ? shown.join(',') : undefined;
}

/** The table: update type → event type, event name and how its fields are read. */
export const UPDATE_TYPES: Readonly<Record<string, { type: EventType; name: string; map: Mapper }>> = Object.freeze({
  message: { type: 'message', name: 'message', map: message('message', false) },
  edited_message: { type: 'message', name: 'edited_message', map: message('edited_message', true) },
  channel_post: { type: 'message', name: 'channel_post', map: message('channel_post', false) },
  edited_channel_post: { type: 'message', name: 'edited_channel_post', map: message('edited_channel_post', true) },
  business_message: { type: 'business', name: 'business_message', map: message('business_message', false) },
  edited_business_message: {
    type: 'business',
    name: 'edited_business_message',
    map: message('edited_business_message', true),
  },
  business_connection: {
    type: 'business',
    name: 'business_connection',
    map: (c, e) => {
      e.by(c.user);
      e.at(c.date);
      e.str('business_connection_id', c.id);
      e.bool('is_enabled', c.is_enabled);
    },
  },
  deleted_business_messages: {
    type: 'business',
    name: 'deleted_business_messages',
    map: (d, e) => {
      e.chat(d.chat);
      e.str('business_connection_id', d.business_connection_id);
      if (Array.isArray(d.message_ids)) e.long('deleted_message_count', d.message_ids.length);
    },
  },
  callback_query: {
    type: 'interaction',
    name: 'callback_query',
    map: (q, e) => {
      e.by(q.from);
      e.str('callback_query_id', q.id);
      e.str('callback_data', q.data);
      // The chat, not the message: that message is the bot's own, and naming it would bill every press as one.
      e.chat(obj(q.message).chat);
    },
  },
  inline_query: {
    type: 'interaction',
    name: 'inline_query',
    map: (q, e, o) => {
      e.by(q.from);
      e.str('inline_query_id', q.id);
      e.str('chat_type', q.chat_type);
      if (o.captureText && typeof q.query === 'string' && q.query !== '') e.text = q.query;
    },
  },
  chosen_inline_result: {
    type: 'interaction',
    name: 'chosen_inline_result',
    map: (r, e, o) => {
      e.by(r.from);
      e.str('chosen_inline_result_id', r.result_id);
      if (o.captureText && typeof r.query === 'string' && r.query !== '') e.text = r.query;
    },
  },
  shipping_query: {
    type: 'payment',
    name: 'shipping_query',
    map: (q, e) => {
      e.by(q.from);
      e.str('shipping_query_id', q.id);
      e.str('invoice_payload', q.invoice_payload);
    },
  },
  pre_checkout_query: {
    type: 'payment',
    name: 'pre_checkout_query',
    map: (q, e) => {
      e.by(q.from);
      e.str('pre_checkout_query_id', q.id);
      payment(q, e);
    },
  },
  purchased_paid_media: {
    type: 'payment',
    name: 'purchased_paid_media',
    map: (p, e) => {
      e.by(p.from);
      e.str('paid_media_payload', p.paid_media_payload);
    },
  },
  poll: {
    type: 'poll',
    name: 'poll',
    map: (p, e) => {
      e.str('poll_id', p.id);
      e.str('poll_type', p.type);
      if (Array.isArray(p.options)) e.long('poll_option_count', p.options.length);
      e.long('poll_total_voter_count', p.total_voter_count);
      e.bool('poll_is_anonymous', p.is_anonymous);
    },
  },
  poll_answer: {
    type: 'poll',
    name: 'poll_answer',
    map: (a, e) => {
      e.by(a.user);
      e.str('poll_id', a.poll_id);
      if (Array.isArray(a.option_ids)) e.str('poll_option_ids', a.option_ids.join(','));
    },
  },
  my_chat_member: { type: 'membership', name: 'my_chat_member', map: membership },
  chat_member: { type: 'membership', name: 'chat_member', map: membership },
  chat_join_request: {
    type: 'membership',
    name: 'chat_join_request',
    map: (r, e) => {
      e.by(r.from);
      e.chat(r.chat);
      e.at(r.date);
      e.str('invite_link', obj(r.invite_link).invite_link);
    },
  },
  message_reaction: {
    type: 'reaction',
    name: 'message_reaction',
    map: (r, e) => {
      e.by(r.user);
      e.chat(r.chat);
      e.at(r.date);
      const added = Array.isArray(r.new_reaction) ? r.new_reaction : [];
      e.str('reaction_type', added.length > 0 ? obj(added[0]).type : 'removed');
      e.str('reaction_emoji', reactionEmoji(added));
    },
  },
  message_reaction_count: {
    type: 'reaction',
    name: 'message_reaction_count',
    map: (r, e) => {
      e.chat(r.chat);
      e.at(r.date);
      const counts = Array.isArray(r.reactions) ? r.reactions.map((x) => obj(x).total_count) : [];
      e.long(
        'reaction_count',
        counts.reduce<number>((n, c) => n + (typeof c === 'number' ? c : 0), 0),
      );
      e.str('reaction_emoji', reactionEmoji(Array.isArray(r.reactions) ? r.reactions.map((x) => obj(x).type) : []));
    },
  },
  chat_boost: {
    type: 'boost',
    name: 'chat_boost',
    map: (u, e) => {
      const b = obj(u.boost);
      boost({ ...b, chat: u.chat }, e);
      e.long('boost_add_date', b.add_date);
      e.long('boost_expiration_date', b.expiration_date);
      e.at(b.add_date);
    },
  },
  removed_chat_boost: {
    type: 'boost',
    name: 'removed_chat_boost',
    map: (u, e) => {
      boost(u, e);
      e.at(u.remove_date);
    },
  },
});

/**
 * The events of one update. An update of a type not in the table is one `platform` event named for the type, with
 * its `from` or `user` when it has one.
 */
export function mapUpdate(update: Update, options: MapOptions = {}): MappedEvent[] {
  const type = Object.keys(update).find((k) => k !== 'update_id');
  if (type === undefined) return [];
  const payload = obj((update as unknown as Obj)[type]);
  const known = Object.hasOwn(UPDATE_TYPES, type) ? UPDATE_TYPES[type] : undefined;
  const e = new Builder(known?.type ?? 'platform', known?.name ?? type);
  e.long('update_id', update.update_id);
  e.str('update_type', type);
  if (known !== undefined) known.map(payload, e, options);
  else e.by(payload.from ?? payload.user);
  return [e.done()];
}

function obj(v: unknown): Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {};
}

function isUser(u: unknown): u is MessengerUser {
  const id = obj(u).id;
  return typeof id === 'number' && Number.isSafeInteger(id) && id > 0;
}
