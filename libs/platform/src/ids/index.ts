import { randomBytes } from 'node:crypto';

let lastMs = 0;
let seq = 0;

/**
 * The one id maker: `<prefix>_` + time (ms, base 36) + a per-process sequence + 12 random bytes.
 * Ids of one process sort by creation time (timelines break ties by id), and stay unguessable
 * (96 random bits), so they can stand in public URLs.
 */
export function newId(prefix: string, at: Date = new Date()): string {
  const ms = at.getTime();
  if (ms === lastMs) seq = (seq + 1) % 36 ** 3;
  else {
    lastMs = ms;
    seq = 0;
  }
  return `${prefix}_${ms.toString(36).padStart(9, '0')}${seq.toString(36).padStart(3, '0')}${randomBytes(12).toString('base64url')}`;
}

/** The part of a `newId` id its order comes from (time and sequence, 12 characters); undefined for other ids. */
export function sortPartOf(id: string): string | undefined {
  return /^[a-z]+_([0-9a-z]{12})/.exec(id)?.[1];
}
