// The webapp envelope: which bot a body names and the session it claims (botId, auth.initData),
// read before anything about its sender is known. A body of at most `prefixBytes` (decompressed)
// is parsed whole; of a longer one only its first `prefixBytes` are looked at, so botId and auth
// must come before events there (as every client of ours sends them). Pure: runs in a worker.
import type { Refusal } from '../base/errors.js';
import { type BodyLimits, tooDeep } from './decode.js';
import { parseUuid } from './ids.js';
import { deeperThan, isObject } from './json.js';

export interface WebappEnvelope {
  botId: string;
  /** null when missing or empty: refused once the bot is known (its checks come first). */
  initData: string | null;
}

export type EnvelopeOutcome = { ok: true; envelope: WebappEnvelope } | { ok: false; refusal: Refusal };

/** The envelope of a parsed webapp body, or the refusal of a body that has none. */
export function readWebappEnvelope(body: unknown): EnvelopeOutcome {
  if (!isObject(body)) return { ok: false, refusal: { code: 'invalid_body' } };
  const botId = parseUuid(body.botId);
  if (botId === null) return { ok: false, refusal: { code: 'bot_id_invalid' } };
  const initData = isObject(body.auth) ? body.auth.initData : undefined;
  return {
    ok: true,
    envelope: { botId, initData: typeof initData === 'string' && initData.trim() !== '' ? initData : null },
  };
}

/** The same body read whole after authentication must name the same bot and session. */
export function sameEnvelope(a: WebappEnvelope, b: WebappEnvelope): boolean {
  return a.botId === b.botId && a.initData === b.initData;
}

const NOT_FIRST = (prefixBytes: number): Refusal => ({
  code: 'invalid_body',
  message: `botId and auth must come before events, within the first ${prefixBytes} bytes of the (decompressed) body.`,
  details: { envelopeMaxBytes: prefixBytes },
});
const SYNTAX: Refusal = { code: 'invalid_json', message: 'The body is not valid JSON.' };

/** Whether an outcome of envelopeFromPrefix only says that the text ended too soon. */
export function needsMore(o: EnvelopeOutcome): boolean {
  return !o.ok && o.refusal.details?.envelopeMaxBytes !== undefined;
}

class Syntax extends Error {}
class TooDeep extends Error {}

/**
 * The envelope from the first bytes of a body too long to parse before authentication. Values of
 * other keys are skipped by their brackets (their syntax is checked when the body is parsed whole,
 * after authentication); botId and auth are parsed as JSON.
 */
export function envelopeFromPrefix(
  text: string,
  limits: Pick<BodyLimits, 'maxDepth'>,
  prefixBytes: number,
): EnvelopeOutcome {
  const n = text.length;
  const space = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;
  const skipSpace = (i: number) => {
    while (i < n && space(text.charCodeAt(i))) i++;
    return i;
  };
  /** The index after the string that starts at i, or -1 when the text ends first. */
  const stringEnd = (i: number): number => {
    for (let j = i + 1; j < n; j++) {
      const c = text.charCodeAt(j);
      if (c === 92) j++;
      else if (c === 34) return j + 1;
      else if (c < 32) throw new Syntax();
    }
    return -1;
  };
  /** The index after the value that starts at i, or -1 when the text ends first. */
  const valueEnd = (i: number, depthLeft: number): number => {
    const c = text.charCodeAt(i);
    if (c === 34) return stringEnd(i);
    if (c === 123 || c === 91) {
      let depth = 0;
      for (let j = i; j < n; j++) {
        const d = text.charCodeAt(j);
        if (d === 34) {
          j = stringEnd(j);
          if (j < 0) return -1;
          j--;
        } else if (d === 123 || d === 91) {
          if (++depth > depthLeft) throw new TooDeep();
        } else if (d === 125 || d === 93) {
          if (--depth === 0) return j + 1;
        }
      }
      return -1;
    }
    let j = i;
    while (j < n) {
      const d = text.charCodeAt(j);
      if (d === 44 || d === 125 || d === 93 || space(d)) break;
      j++;
    }
    if (j === i) throw new Syntax();
    return j === n ? -1 : j;
  };

  let botId: unknown;
  let auth: unknown;
  let haveBot = false;
  let haveAuth = false;
  try {
    let i = skipSpace(0);
    if (i >= n) return { ok: false, refusal: NOT_FIRST(prefixBytes) };
    if (text.charCodeAt(i) !== 123) {
      // Not an object; as deep as the prefix shows it is refused for that, like any body.
      valueEnd(i, limits.maxDepth);
      return { ok: false, refusal: { code: 'invalid_body' } };
    }
    i++;
    for (let first = true; !(haveBot && haveAuth); first = false) {
      i = skipSpace(i);
      if (i >= n) return { ok: false, refusal: NOT_FIRST(prefixBytes) };
      if (!first) {
        const c = text.charCodeAt(i);
        // The object ended within the prefix: what it lacks is missing, as in a short body.
        if (c === 125) break;
        if (c !== 44) throw new Syntax();
        i = skipSpace(i + 1);
      } else if (text.charCodeAt(i) === 125) break;
      if (text.charCodeAt(i) !== 34) throw new Syntax();
      const keyEnd = stringEnd(i);
      if (keyEnd < 0) return { ok: false, refusal: NOT_FIRST(prefixBytes) };
      const key = JSON.parse(text.slice(i, keyEnd)) as string;
      i = skipSpace(keyEnd);
      if (i >= n) return { ok: false, refusal: NOT_FIRST(prefixBytes) };
      if (text.charCodeAt(i) !== 58) throw new Syntax();
      i = skipSpace(i + 1);
      if (i >= n) return { ok: false, refusal: NOT_FIRST(prefixBytes) };
      const end = valueEnd(i, limits.maxDepth - 1);
      if (end < 0) return { ok: false, refusal: NOT_FIRST(prefixBytes) };
      // The last of repeated keys wins, as in JSON.parse; the whole body is checked against this later.
      if (key === 'botId') {
        botId = JSON.parse(text.slice(i, end));
        haveBot = true;
      } else if (key === 'auth') {
        auth = JSON.parse(text.slice(i, end));
        if (deeperThan(auth, limits.maxDepth - 1)) throw new TooDeep();
        haveAuth = true;
      }
      i = end;
    }
  } catch (err) {
    if (err instanceof TooDeep) return { ok: false, refusal: tooDeep(limits.maxDepth) };
    if (err instanceof Syntax || err instanceof SyntaxError) return { ok: false, refusal: SYNTAX };
    throw err;
  }
  return readWebappEnvelope({ botId, auth });
}
