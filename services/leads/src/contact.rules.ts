import { AppError } from '@estate/platform/errors';
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';

/** Numbers written without a country code are read in this region (see docs/decisions/0041-leads-capture-and-pipeline.md). */
export const DEFAULT_PHONE_REGION: CountryCode = 'US';

/** E.164 (`+15125550100`) from any common notation, or null when it is not a valid number. */
export function toE164(raw: string, region: CountryCode = DEFAULT_PHONE_REGION): string | null {
  const parsed = parsePhoneNumberFromString(raw, region);
  return parsed && parsed.isValid() ? parsed.number : null;
}

/** The phone in E.164, or a 422 naming the field. */
export function e164Or422(raw: string | undefined, path = 'phone'): string | undefined {
  if (raw === undefined) return undefined;
  const phone = toE164(raw);
  if (!phone)
    throw new AppError('validation_failed', 'The phone number is not valid', {
      errors: [
        { path, message: 'is not a valid phone number (outside the US, start with the country code, e.g. +44)' },
      ],
    });
  return phone;
}

/** Lowercase, accents dropped: "José" and "jose" are the same word. */
export function fold(s: string): string {
  return s
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase();
}

/** `Open House!` -> `open-house`; what is left of nothing is `unknown`. */
export function slugify(raw: string): string {
  const slug = fold(raw)
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100);
  return slug || 'unknown';
}

/** The stored keys that make email and phone unique within an account (one unique index each). */
export const emailKey = (accountId: string, email: string) => `${accountId}|${email}`;
export const phoneKey = (accountId: string, phone: string) => `${accountId}|${phone}`;

const MAX_TOKEN = 40;
const MIN_DIGITS = 3;
const PHONE_LIKE = /^\+?[\d\s().-]+$/;

function prefixes(word: string, min = 1): string[] {
  const out: string[] = [];
  for (let i = min; i <= Math.min(word.length, MAX_TOKEN); i++) out.push(word.slice(0, i));
  return out;
}

const alnum = (s: string) => fold(s).replace(/[^a-z0-9]/g, '');

/**
 * Prefixes of the words of name, email and phone, stored with the lead. A search word matches a
 * lead when it is one of them (an indexed equality on an array member, the same on every engine),
 * which gives "starts with" search without `$regex`.
 */
export function searchTokens(contact: { name: string; email?: string | null; phone?: string | null }): string[] {
  const tokens = new Set<string>();
  for (const part of fold(contact.name).split(/\s+/)) {
    for (const p of prefixes(alnum(part))) tokens.add(p);
  }
  if (contact.email) {
    const email = contact.email.toLowerCase();
    const domain = email.slice(email.indexOf('@') + 1);
    for (const p of [...prefixes(email), ...prefixes(domain)]) tokens.add(p);
  }
  if (contact.phone) {
    const digits = contact.phone.replace(/\D/g, '');
    const national = parsePhoneNumberFromString(contact.phone)?.nationalNumber ?? digits;
    // The local part (last 7 digits) lets "555-0100" find +15125550100.
    for (const d of [digits, national, national.slice(-7)]) for (const p of prefixes(d, MIN_DIGITS)) tokens.add(p);
  }
  return [...tokens];
}

/** For each word of a search, the tokens that would match it; a lead must match every word. */
export function searchTerms(q: string): string[][] {
  // A phone written with spaces ("+1 512 555") is one number, not several words.
  const digits = q.replace(/\D/g, '');
  if (PHONE_LIKE.test(q.trim()) && digits.length >= MIN_DIGITS) return [[digits.slice(0, MAX_TOKEN)]];
  return q
    .split(/\s+/)
    .filter((w) => w.length > 0)
    .map((word) => {
      const forms = new Set([word.toLowerCase().slice(0, MAX_TOKEN), alnum(word).slice(0, MAX_TOKEN)]);
      const wordDigits = word.replace(/\D/g, '');
      if (PHONE_LIKE.test(word) && wordDigits.length >= MIN_DIGITS) forms.add(wordDigits.slice(0, MAX_TOKEN));
      forms.delete('');
      return [...forms];
    })
    .filter((forms) => forms.length > 0);
}
