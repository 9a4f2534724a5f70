import { describe, expect, it } from 'vitest';
import { verifySignature } from '../../../src/worker/ed25519.js';
import { checkAge, dataCheckString, parseInitData } from '../../../src/auth/initdata.js';
import { makeInitData, newSigner } from '../../helpers/initdata.js';

const signer = newSigner();

describe('parseInitData', () => {
  it('builds the data-check-string from the decoded fields, sorted, without hash and signature', () => {
    const s =
      'user=%7B%22id%22%3A5%2C%22first_name%22%3A%22A%20B%22%7D&auth_date=1700000000&query_id=Q&hash=h&signature=s';
    const r = parseInitData(s);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.data.fields).toBe('auth_date=1700000000\nquery_id=Q\nuser={"id":5,"first_name":"A B"}');
    expect(r.data.user).toMatchObject({ id: '5', firstName: 'A B', username: null, isPremium: false });
    expect(dataCheckString('42', r.data.fields)).toBe(`42:WebAppData\n${r.data.fields}`);
  });

  it.each([
    ['', 'initdata_empty'],
    ['   ', 'initdata_empty'],
    ['=x', 'initdata_malformed'],
    ['a=1&a=2&signature=s', 'initdata_malformed'],
    ['auth_date=1&user=%7B%22id%22%3A1%7D', 'initdata_signature_missing'],
    ['signature=s&user=%7B%22id%22%3A1%7D', 'initdata_auth_date_missing'],
    ['signature=s&auth_date=x&user=%7B%22id%22%3A1%7D', 'initdata_auth_date_missing'],
    ['signature=s&auth_date=1', 'initdata_user_missing'],
    ['signature=s&auth_date=1&user=%7B%7D', 'initdata_user_missing'],
    ['signature=s&auth_date=1&user=nojson', 'initdata_user_missing'],
    ['signature=s&auth_date=1&user=%7B%22id%22%3A-1%7D', 'initdata_user_missing'],
  ])('%j → %s', (s, code) => {
    expect(parseInitData(s)).toEqual({ ok: false, code });
  });

  it('verifies what the messenger signs', () => {
    const s = makeInitData(signer, { messengerBotId: 99 });
    const r = parseInitData(s);
    if (!r.ok) throw new Error(r.code);
    expect(verifySignature(dataCheckString('99', r.data.fields), r.data.signature, [signer.publicKeyHex])).toBe(true);
    expect(verifySignature(dataCheckString('98', r.data.fields), r.data.signature, [signer.publicKeyHex])).toBe(false);
    expect(verifySignature(dataCheckString('99', r.data.fields), r.data.signature, [newSigner().publicKeyHex])).toBe(
      false,
    );
    expect(verifySignature(dataCheckString('99', r.data.fields), 'short', [signer.publicKeyHex])).toBe(false);
    expect(verifySignature(dataCheckString('99', r.data.fields), `${r.data.signature}==`, [signer.publicKeyHex])).toBe(
      true,
    );
  });
});

describe('checkAge', () => {
  it('accepts while younger than the limit and up to a minute ahead', () => {
    expect(checkAge(1000, 1000 + 899, 900)).toBeNull();
    expect(checkAge(1000, 1000 + 900, 900)).toBe('initdata_expired');
    expect(checkAge(1060, 1000, 900)).toBeNull();
    expect(checkAge(1061, 1000, 900)).toBe('initdata_from_future');
  });
});
