import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';

/**
 * Secrets a service must use again (signing secrets, a feed's credentials) are stored encrypted (AES-256-GCM under a
 * key derived from the service's secret key for one purpose), never in clear.
 */
export class SecretBox {
  private readonly key: Buffer;

  /** `purpose` separates the keys derived from one master key: `{ salt: 'estate-webhooks', info: '…' }`. */
  constructor(masterKey: string, purpose: { salt: string; info: string }) {
    this.key = Buffer.from(hkdfSync('sha256', masterKey, purpose.salt, purpose.info, 32));
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `v1.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
  }

  open(sealed: string): string {
    if (!sealed.startsWith('v1.')) throw new Error('unknown sealed secret format');
    const raw = Buffer.from(sealed.slice(3), 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }
}

/**
 * The embedded profile's key for stored secrets: a random key in a file of the data folder (owner-only), made on
 * first start. Losing it makes the stored secrets unusable (they must be set again).
 */
export function secretKeyFile(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const key = randomBytes(32).toString('base64url');
  try {
    writeFileSync(path, `${key}\n`, { mode: 0o600, flag: 'wx' });
    return key;
  } catch (err) {
    // Another process made it first: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return readFileSync(path, 'utf8').trim();
    throw err;
  }
}
